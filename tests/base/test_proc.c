/* tc_proc_state and tc_proc_ended: this process, a stopped child, a zombie, a process that does
 * not exist. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/proc.h"

static void test_self_runs(void **state)
{
    (void)state;
    assert_int_equal(tc_proc_state((int)getpid()), 'R');
    assert_int_equal(tc_proc_ended((int)getpid()), 0);
}

static void test_stopped_then_zombie_then_gone(void **state)
{
    (void)state;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        for (;;)
            pause();
    }
    assert_int_equal(kill(child, SIGSTOP), 0);
    int st;
    assert_int_equal(waitpid(child, &st, WUNTRACED), child);
    assert_true(WIFSTOPPED(st));
    assert_int_equal(tc_proc_state((int)child), 'T');
    assert_int_equal(tc_proc_ended((int)child), 0); /* stopped is not ended */
    assert_int_equal(kill(child, SIGKILL), 0);
    /* killed and not yet reaped: a zombie */
    assert_int_equal(waitid(P_PID, (id_t)child, NULL, WEXITED | WNOWAIT), 0);
    assert_int_equal(tc_proc_state((int)child), 'Z');
    assert_int_equal(tc_proc_ended((int)child), 1); /* kill() still finds it */
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_int_equal(tc_proc_state((int)child), 0);
    assert_int_equal(tc_proc_ended((int)child), 1);
}

static void test_no_such_process(void **state)
{
    (void)state;
    assert_int_equal(tc_proc_state(-5), 0);
    assert_int_equal(tc_proc_state(0x7ffffff0), 0); /* above any pid_max */
    assert_int_equal(tc_proc_ended(0x7ffffff0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_runs),
        cmocka_unit_test(test_stopped_then_zombie_then_gone),
        cmocka_unit_test(test_no_such_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
