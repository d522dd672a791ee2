/* TC_TOPO_XML and TC_TOPO_SYNTHETIC: good overrides, and errors that name the file
 * and line, or the token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/topo/topo.h"
#include "topo_test_util.h"

static tc_topo_node_t node;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static const char *tmp_path(const char *name)
{
    static char path[512];
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(path, sizeof(path), "%s/%s", dir != NULL ? dir : "/tmp", name);
    return path;
}

/* The XML file must be refused with TC_ERR_CONFIG naming it and containing @p want. */
static void xml_refused(const char *name, const char *text, const char *want)
{
    char path[512];

    snprintf(path, sizeof(path), "%s", tmp_path(name));
    if (text != NULL) {
        write_file(path, text);
    }
    memset(&node, 0x11, sizeof(node));
    if (tc_topo_node_from_xml(path, &node) != TC_ERR_CONFIG) {
        fail_msg("%s: accepted or wrong status", name);
    }
    if (strstr(tc_last_error(), path) == NULL || strstr(tc_last_error(), want) == NULL) {
        fail_msg("detail \"%s\" lacks the path or \"%s\"", tc_last_error(), want);
    }
    assert_int_equal(node.npus, 0x11111111);
}

static void test_xml_broken(void **state)
{
    static const char head[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                               "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                               "<topology version=\"2.0\">\n";
    char text[4096];
    FILE *f;
    size_t n;

    (void)state;
    snprintf(text, sizeof(text),
             "%s  <object type=\"Machine\" os_index=\"0\">\n"
             "    <object type=\"Package\">\n  </objekt>\n</topology>\n",
             head);
    xml_refused("mismatch.xml", text,
                "line 6: </objekt> does not match <object> opened at "
                "line 5");
    snprintf(text, sizeof(text), "%s  <object type=Machine os_index=\"0\"/>\n</topology>\n", head);
    xml_refused("unquoted.xml", text,
                "line 4: in <object>, attribute type: expected a quoted "
                "value, found 'M'");
    xml_refused("notopo.xml", "<?xml version=\"1.0\"?>\n\n<machine cores=\"4\"/>\n",
                "line 3: the root element is <machine>, not an hwloc <topology>");
    xml_refused("empty.xml", "", "no element in the file");
    xml_refused("missing.xml", NULL, "cannot read it: No such file or directory");

    /* a real machine file cut in the middle */
    f = fopen(TC_FAKE_DGX8, "r");
    assert_non_null(f);
    n = fread(text, 1, 2000, f);
    fclose(f);
    assert_int_equal(n, 2000);
    while (n > 0 && text[n - 1] != '\n') { /* cut between two lines */
        n--;
    }
    text[n] = '\0';
    xml_refused("cut.xml", text, "the file ends inside <object> opened at line");
}

static void test_xml_env(void **state)
{
    (void)state;
    assert_int_equal(setenv("TC_TOPO_XML", TC_FAKE_PCIE4, 1), 0);
    assert_int_equal(tc_topo_node_probe(&node), TC_OK);
    assert_int_equal(node.source, TC_TOPO_SRC_XML);
    assert_int_equal(node.ngpus, 4);

    write_file(tmp_path("env_bad.xml"), "<topology>\n<object>\n</topology>\n");
    assert_int_equal(setenv("TC_TOPO_XML", tmp_path("env_bad.xml"), 1), 0);
    assert_int_equal(tc_topo_node_probe(&node), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "TC_TOPO_XML: "));
    assert_non_null(strstr(tc_last_error(), "env_bad.xml"));
    assert_non_null(strstr(tc_last_error(), "line 3: </topology> does not match <object> "
                                            "opened at line 2"));

    assert_int_equal(setenv("TC_TOPO_SYNTHETIC", "pack:1 pu:1", 1), 0);
    assert_int_equal(tc_topo_node_probe(&node), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "are both set"));
    unsetenv("TC_TOPO_XML");
    unsetenv("TC_TOPO_SYNTHETIC");
}

static void synthetic_refused(const char *desc, const char *want)
{
    if (tc_topo_node_from_synthetic(desc, &node) != TC_ERR_CONFIG) {
        fail_msg("\"%s\" accepted or wrong status", desc);
    }
    if (strstr(tc_last_error(), want) == NULL) {
        fail_msg("detail \"%s\" lacks \"%s\"", tc_last_error(), want);
    }
}

static void test_synthetic(void **state)
{
    (void)state;
    assert_int_equal(tc_topo_node_from_synthetic("pack:2 numa:2 l3:1 core:3 pu:2", &node), TC_OK);
    assert_int_equal(node.source, TC_TOPO_SRC_SYNTHETIC);
    assert_int_equal(node.npackages, 2);
    assert_int_equal(node.nnuma, 4);
    assert_int_equal(node.nl3, 4);
    assert_int_equal(node.ncores, 12);
    assert_int_equal(node.npus, 24);
    assert_int_equal(node.ngpus, 0);
    assert_int_equal(node.nnics, 0);
    assert_int_equal(node.io_ok, 0);

    synthetic_refused("pack:2 foo:3 pu:2", "token 2 \"foo:3\" is not valid");
    synthetic_refused("pack:2 core:2 pu:2 junk", "token 4 \"junk\"");
    synthetic_refused("pack:x core:2 pu:1", "token 1 \"pack:x\"");
    synthetic_refused("pack:2 pu:2 core:2", "token 3 \"core:2\"");
    synthetic_refused("pack:2 core:2", "the last token must be a pu level");
    synthetic_refused("   ", "it is empty");
    synthetic_refused("pack:2 core:2", "synthetic topology \"pack:2 core:2\"");

    assert_int_equal(setenv("TC_TOPO_SYNTHETIC", "pack:2 bogus pu:1", 1), 0);
    assert_int_equal(tc_topo_node_probe(&node), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "TC_TOPO_SYNTHETIC: "));
    assert_non_null(strstr(tc_last_error(), "token 2 \"bogus\""));
    assert_int_equal(setenv("TC_TOPO_SYNTHETIC", "pack:3 core:1 pu:1", 1), 0);
    assert_int_equal(tc_topo_node_probe(&node), TC_OK);
    assert_int_equal(node.npackages, 3);
    unsetenv("TC_TOPO_SYNTHETIC");
    assert_int_equal(tc_topo_node_from_synthetic(NULL, &node), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_topo_node_from_xml(NULL, &node), TC_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml_broken),
        cmocka_unit_test(test_xml_env),
        cmocka_unit_test(test_synthetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
