/* A temporary folder for the files of a cmocka group (tuning files): made by the group's setup,
 * removed with its contents by its teardown. Included once per test. */
#ifndef TC_TESTS_ALGO_TMPDIR_H
#define TC_TESTS_ALGO_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char tmpdir[64];

/* mkdtemp under /tmp with @p name's prefix: 0, or -1 (the group does not run). */
static int tmpdir_make(const char *name)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/%s.XXXXXX", name);
    return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int tmpdir_remove(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
