/* Fuzz the names of allocated windows' segments (runtime/src/win_seg.h): the names in /dev/shm
 * that any process of the machine may create, which tc_rt_win_sweep() parses to find a creator
 * that ended.
 *
 * Input: u64 the pid namespace (little-endian), then the name (any bytes; cut at the first NUL,
 * as a directory entry's name is).
 *
 * Properties: tc_rt_win_seg_pid() agrees with an independent reading of the rules ("tcw." and
 * four decimal fields separated by dots, each only digits, at least one, within 64 bits; the
 * first the namespace; the second the pid, 1 to INT_MAX); reads no byte past the name's NUL
 * (ASan); and a name made by tc_rt_win_seg_name() from the input's numbers parses back to its
 * pid in this process's namespace (the one it carries) and to nothing in another. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/src/win_seg.h"
#include "tcomms/base/proc.h"

/* The field at *@p p: digits only, at least one, within 64 bits, followed by @p end. */
static int ref_field(const char **p, char end, unsigned long long *v)
{
    const char *s = *p;
    unsigned long long x = 0;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        unsigned d = (unsigned)(*s - '0');
        if (x > (ULLONG_MAX - d) / 10)
            return 0;
        x = x * 10 + d;
    }
    if (digits == 0 || *s != end)
        return 0;
    *v = x;
    *p = end ? s + 1 : s;
    return 1;
}

static int ref_pid(const char *name, unsigned long long ns)
{
    unsigned long long f[4];
    if (strncmp(name, "tcw.", 4) != 0)
        return 0;
    const char *p = name + 4;
    for (int i = 0; i < 4; i++)
        if (!ref_field(&p, i < 3 ? '.' : '\0', &f[i]))
            return 0;
    return f[0] == ns && f[1] >= 1 && f[1] <= INT_MAX ? (int)f[1] : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    unsigned long long ns = 0;
    for (int i = 0; i < 8; i++)
        ns |= (unsigned long long)data[i] << (8 * i);
    size_t n = size - 8;
    char *name = malloc(n + 1); /* exactly the name and its NUL: ASan sees any read past */
    if (name == NULL)
        return 0;
    memcpy(name, data + 8, n);
    name[n] = '\0';
    int got = tc_rt_win_seg_pid(name, ns), want = ref_pid(name, ns);
    if (got != want) {
        fprintf(stderr, "win_seg_pid(\"%s\", %llu) = %d, the rules say %d\n", name, ns, got, want);
        abort();
    }
    free(name);

    /* a made name parses back, in its namespace only */
    uint32_t words[3] = {0};
    memcpy(words, data + 8, n < sizeof(words) ? n : sizeof(words));
    int pid = (int)(words[0] & INT_MAX) | 1; /* 1 to INT_MAX */
    char made[128];
    if (!tc_rt_win_seg_name(made, sizeof(made), pid, words[1], words[2]) || made[0] != '/')
        abort();
    unsigned long long own = tc_proc_pidns(); /* what the name carries */
    if (tc_rt_win_seg_pid(made + 1, own) != pid || tc_rt_win_seg_pid(made + 1, own + 1) != 0) {
        fprintf(stderr, "\"%s\" does not parse back to pid %d in namespace %llu only\n", made, pid,
                own);
        abort();
    }
    return 0;
}
