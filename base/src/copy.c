/* Bulk copies (copy.h): the choice of the copy for misaligned mid-size copies, made once. */
#include "tcomms/base/copy.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "tcomms/base/config.h"
#include "tcomms/base/log.h"

static int copy_mode = -1; /* -1 not decided yet; else tc_copy_loop_on's answer (atomic) */

/* The CPU's vendor is one whose `rep movsb` is slow for misaligned copies. */
static int copy_vendor_slow(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    char vendor[13];
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return 0;
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = '\0';
    return strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0;
#else
    return 0;
#endif
}

tc_status_t tc_copy_config(void)
{
    static const char *const choices[] = {"auto", "libc", "loop", NULL};
    int which = 0;
    tc_status_t st = tc_config_enum("TC_COPY", choices, 0, &which);
    if (st != TC_OK)
        return st;
    /* two threads deciding at once decide the same */
    __atomic_store_n(&copy_mode, which == 0 ? copy_vendor_slow() : which == 2, __ATOMIC_RELAXED);
    return TC_OK;
}

int tc_copy_loop_on(void)
{
    int mode = __atomic_load_n(&copy_mode, __ATOMIC_RELAXED);
    if (mode >= 0)
        return mode;
    if (tc_copy_config() != TC_OK) { /* a user of the layers below without a communicator */
        tc_log_warn(TC_SUBSYS_BASE, "%s: the default (auto) instead", tc_last_error());
        __atomic_store_n(&copy_mode, copy_vendor_slow(), __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&copy_mode, __ATOMIC_RELAXED);
}

void tc_copy_mid(void *dst, const void *src, size_t n)
{
    if (!tc_copy_loop_on()) {
        memcpy(dst, src, n);
        return;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        memcpy(d, s, 64);               /* four unaligned 16-byte moves: no `rep movsb` */
        __asm__("" : "+r"(d), "+r"(s)); /* nor a compiler that sees a memcpy in the loop */
    }
    memcpy(d, s, n);
}
