/* Explain why hwloc refused an override: the line of a malformed XML file, the
 * token of a synthetic string. hwloc only says "failed" (its own messages go to
 * stderr and only with HWLOC_XML_VERBOSE / HWLOC_SYNTHETIC_VERBOSE). */
#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

#define TC_TOPO_XML_MAX_DEPTH 128
#define TC_TOPO_XML_NAME_MAX 64

typedef struct tc_topo_xml {
    FILE *f;
    int c;    /* current character, EOF at the end */
    int line; /* its line */
} tc_topo_xml_t;

static void tc_topo_xml_next(tc_topo_xml_t *x)
{
    if (x->c == '\n') {
        x->line++;
    }
    x->c = getc(x->f);
}

static void tc_topo_xml_skip_space(tc_topo_xml_t *x)
{
    while (x->c != EOF && isspace(x->c)) {
        tc_topo_xml_next(x);
    }
}

static int tc_topo_xml_name_char(int c, int first)
{
    return isalpha(c) || c == '_' || c == ':' || (!first && (isdigit(c) || c == '-' || c == '.'));
}

/* A name into buf (truncated); 0 when there is none. */
static int tc_topo_xml_name(tc_topo_xml_t *x, char *buf)
{
    size_t n = 0;

    if (!tc_topo_xml_name_char(x->c, 1)) {
        return 0;
    }
    while (x->c != EOF && tc_topo_xml_name_char(x->c, 0)) {
        if (n + 1 < TC_TOPO_XML_NAME_MAX) {
            buf[n++] = (char)x->c;
        }
        tc_topo_xml_next(x);
    }
    buf[n] = '\0';
    return 1;
}

/* Skip until @p end (e.g. "-->"); 0 at the end of the file. */
static int tc_topo_xml_skip_until(tc_topo_xml_t *x, const char *end)
{
    size_t m = 0, n = strlen(end);

    while (x->c != EOF) {
        m = x->c == end[m] ? m + 1 : (x->c == end[0] ? 1 : 0);
        tc_topo_xml_next(x);
        if (m == n) {
            return 1;
        }
    }
    return 0;
}

static const char *tc_topo_xml_char(int c, char *buf)
{
    if (c == EOF) {
        return "the end of the file";
    }
    snprintf(buf, 16, isprint(c) ? "'%c'" : "byte 0x%02x", c);
    return buf;
}

/* Returns 1 with a message when malformed. */
static int tc_topo_xml_scan(tc_topo_xml_t *x, char *what, size_t len, char *root, int *root_line)
{
    char(*stack)[TC_TOPO_XML_NAME_MAX] = NULL;
    int lines[TC_TOPO_XML_MAX_DEPTH];
    int depth = 0, seen_root = 0, rc = 1, open_line;
    char name[TC_TOPO_XML_NAME_MAX], attr[TC_TOPO_XML_NAME_MAX], cbuf[16];

    stack = malloc(TC_TOPO_XML_MAX_DEPTH * sizeof(*stack));
    if (stack == NULL) {
        snprintf(what, len, "no memory to look for the error");
        return 0;
    }
    root[0] = '\0';
    for (;;) {
        if (x->c == EOF) {
            if (depth > 0) {
                snprintf(what, len, "line %d: the file ends inside <%s> opened at line %d", x->line,
                         stack[depth - 1], lines[depth - 1]);
            } else if (!seen_root) {
                snprintf(what, len, "line %d: no element in the file", x->line);
            } else {
                rc = 0;
            }
            goto out;
        }
        if (x->c != '<') {
            if (depth == 0 && !isspace(x->c)) {
                snprintf(what, len, "line %d: text %s outside of the root element", x->line,
                         tc_topo_xml_char(x->c, cbuf));
                goto out;
            }
            tc_topo_xml_next(x);
            continue;
        }
        open_line = x->line;
        tc_topo_xml_next(x);
        if (x->c == '?') {
            if (!tc_topo_xml_skip_until(x, "?>")) {
                snprintf(what, len, "line %d: '<?' not closed by '?>'", open_line);
                goto out;
            }
        } else if (x->c == '!') {
            tc_topo_xml_next(x);
            if (x->c == '-') {
                if (!tc_topo_xml_skip_until(x, "-->")) {
                    snprintf(what, len, "line %d: comment not closed by '-->'", open_line);
                    goto out;
                }
            } else if (!tc_topo_xml_skip_until(x, ">")) {
                snprintf(what, len, "line %d: '<!' not closed by '>'", open_line);
                goto out;
            }
        } else if (x->c == '/') {
            tc_topo_xml_next(x);
            if (!tc_topo_xml_name(x, name)) {
                snprintf(what, len, "line %d: no element name after '</'", x->line);
                goto out;
            }
            tc_topo_xml_skip_space(x);
            if (x->c != '>') {
                snprintf(what, len, "line %d: expected '>' after '</%s', found %s", x->line, name,
                         tc_topo_xml_char(x->c, cbuf));
                goto out;
            }
            tc_topo_xml_next(x);
            if (depth == 0) {
                snprintf(what, len, "line %d: </%s> closes no open element", open_line, name);
                goto out;
            }
            if (strcmp(name, stack[depth - 1]) != 0) {
                snprintf(what, len, "line %d: </%s> does not match <%s> opened at line %d",
                         open_line, name, stack[depth - 1], lines[depth - 1]);
                goto out;
            }
            depth--;
        } else {
            if (!tc_topo_xml_name(x, name)) {
                snprintf(what, len, "line %d: expected an element name after '<', found %s",
                         x->line, tc_topo_xml_char(x->c, cbuf));
                goto out;
            }
            if (depth == 0) {
                if (seen_root) {
                    snprintf(what, len, "line %d: a second root element <%s>", open_line, name);
                    goto out;
                }
                seen_root = 1;
                snprintf(root, TC_TOPO_XML_NAME_MAX, "%s", name);
                *root_line = open_line;
            }
            for (;;) {
                tc_topo_xml_skip_space(x);
                if (x->c == '>' || x->c == '/') {
                    break;
                }
                if (!tc_topo_xml_name(x, attr)) {
                    snprintf(what, len,
                             "line %d: in <%s>, expected an attribute, '>' or '/>', "
                             "found %s",
                             x->line, name, tc_topo_xml_char(x->c, cbuf));
                    goto out;
                }
                tc_topo_xml_skip_space(x);
                if (x->c != '=') {
                    snprintf(what, len, "line %d: in <%s>, attribute %s: expected '=', found %s",
                             x->line, name, attr, tc_topo_xml_char(x->c, cbuf));
                    goto out;
                }
                tc_topo_xml_next(x);
                tc_topo_xml_skip_space(x);
                if (x->c != '"' && x->c != '\'') {
                    snprintf(what, len,
                             "line %d: in <%s>, attribute %s: expected a quoted value, "
                             "found %s",
                             x->line, name, attr, tc_topo_xml_char(x->c, cbuf));
                    goto out;
                }
                {
                    int quote = x->c, start = x->line;
                    tc_topo_xml_next(x);
                    while (x->c != EOF && x->c != quote && x->c != '<') {
                        tc_topo_xml_next(x);
                    }
                    if (x->c != quote) {
                        snprintf(what, len,
                                 "line %d: in <%s>, the value of attribute %s (from "
                                 "line %d) is not closed",
                                 x->line, name, attr, start);
                        goto out;
                    }
                    tc_topo_xml_next(x);
                }
            }
            if (x->c == '/') {
                tc_topo_xml_next(x);
                if (x->c != '>') {
                    snprintf(what, len, "line %d: in <%s>, expected '>' after '/', found %s",
                             x->line, name, tc_topo_xml_char(x->c, cbuf));
                    goto out;
                }
                tc_topo_xml_next(x);
            } else {
                tc_topo_xml_next(x);
                if (depth == TC_TOPO_XML_MAX_DEPTH) {
                    snprintf(what, len, "line %d: elements nested deeper than %d", open_line,
                             TC_TOPO_XML_MAX_DEPTH);
                    goto out;
                }
                snprintf(stack[depth], TC_TOPO_XML_NAME_MAX, "%s", name);
                lines[depth++] = open_line;
            }
        }
    }
out:
    free(stack);
    return rc;
}

int tc_topo_xml_check(const char *path, char *what, size_t len)
{
    tc_topo_xml_t x;
    char root[TC_TOPO_XML_NAME_MAX];
    int root_line = 0, bad;

    x.f = fopen(path, "r");
    if (x.f == NULL) {
        snprintf(what, len, "cannot open it: %s", strerror(errno));
        return 0;
    }
    x.line = 1;
    x.c = getc(x.f);
    bad = tc_topo_xml_scan(&x, what, len, root, &root_line);
    (void)fclose(x.f); /* read only: nothing to lose */
    if (!bad) {
        if (strcmp(root, "topology") != 0) {
            snprintf(what, len, "line %d: the root element is <%s>, not an hwloc <topology>",
                     root_line, root);
        } else {
            snprintf(what, len,
                     "well-formed XML, but hwloc refused its content (root "
                     "<topology> at line %d); HWLOC_XML_VERBOSE=1 lstopo --input FILE says why",
                     root_line);
        }
    }
    return bad;
}

/* Whether hwloc accepts a description. */
static int tc_topo_synthetic_ok(const char *desc)
{
    hwloc_topology_t topo;
    int ok;

    if (hwloc_topology_init(&topo) != 0) {
        return 1; /* cannot tell: blame nothing */
    }
    ok = hwloc_topology_set_synthetic(topo, desc) == 0;
    hwloc_topology_destroy(topo);
    return ok;
}

void tc_topo_synthetic_blame(const char *desc, char *what, size_t len)
{
    size_t n = strlen(desc), start = 0, end, cap = n + 16;
    char *prefix = malloc(cap);
    int index = 0, is_pu = 0;

    if (prefix == NULL) {
        snprintf(what, len, "hwloc refused it");
        return;
    }
    /* hwloc wants the last level to be PU: try each prefix of tokens closed by "pu:1" */
    for (;;) {
        while (start < n && isspace((unsigned char)desc[start])) {
            start++;
        }
        if (start == n) {
            break;
        }
        for (end = start; end < n && !isspace((unsigned char)desc[end]); end++) {
        }
        index++;
        {
            hwloc_obj_type_t type;
            union hwloc_obj_attr_u attr;
            char tok[64];
            size_t tl = end - start, colon;

            snprintf(tok, sizeof(tok), "%.*s", (int)(tl < 63 ? tl : 63), desc + start);
            colon = strcspn(tok, ":");
            tok[colon] = '\0';
            is_pu = hwloc_type_sscanf(tok, &type, &attr, sizeof(attr)) == 0 && type == HWLOC_OBJ_PU;
        }
        snprintf(prefix, cap, "%.*s%s", (int)end, desc, is_pu ? "" : " pu:1");
        if (!tc_topo_synthetic_ok(prefix)) {
            snprintf(what, len,
                     "token %d \"%.*s\" is not valid there (expected TYPE:COUNT with "
                     "a known type, e.g. pack:2 numa:1 l3:1 core:4 pu:2, ending with pu)",
                     index, (int)(end - start), desc + start);
            free(prefix);
            return;
        }
        start = end;
    }
    free(prefix);
    if (index == 0) {
        snprintf(what, len, "it is empty");
    } else if (!is_pu) {
        snprintf(what, len, "the last token must be a pu level (e.g. pu:1)");
    } else {
        snprintf(what, len, "hwloc refused it as a whole (try HWLOC_SYNTHETIC_VERBOSE=1)");
    }
}
