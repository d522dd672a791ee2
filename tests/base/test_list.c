/* Intrusive doubly linked list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tcomms/base/list.h"

struct item {
    int value;
    tc_list_t link;
    int after;
};

/* The values of the list, front to back, compared with @p want. */
static void assert_list(const tc_list_t *head, const int *want, size_t n)
{
    const tc_list_t *pos;
    size_t i = 0;

    assert_int_equal(tc_list_length(head), n);
    tc_list_for_each(pos, head)
    {
        assert_true(i < n);
        assert_int_equal(tc_container_of(pos, struct item, link)->value, want[i]);
        i++;
    }
    assert_int_equal(i, n);
    /* and backwards through prev */
    i = n;
    for (pos = head->prev; pos != head; pos = pos->prev) {
        assert_true(i > 0);
        i--;
        assert_int_equal(tc_container_of(pos, struct item, link)->value, want[i]);
    }
    assert_int_equal(i, 0);
    assert_int_equal(tc_list_empty(head), n == 0);
}

static void test_list_ops(void **state)
{
    struct item it[6];
    tc_list_t head, *pos, *tmp;

    for (int i = 0; i < 6; i++) {
        it[i].value = i;
        it[i].after = 1000 + i;
        tc_list_init(&it[i].link);
    }
    tc_list_init(&head);
    assert_list(&head, NULL, 0);
    assert_null(tc_list_front(&head));
    assert_null(tc_list_back(&head));
    assert_null(tc_list_pop_front(&head));

    tc_list_push_back(&head, &it[1].link);
    tc_list_push_back(&head, &it[2].link);
    tc_list_push_front(&head, &it[0].link);
    tc_list_push_back(&head, &it[3].link);
    {
        const int want[] = {0, 1, 2, 3};
        assert_list(&head, want, 4);
    }
    assert_ptr_equal(tc_list_front(&head), &it[0].link);
    assert_ptr_equal(tc_list_back(&head), &it[3].link);
    assert_ptr_equal(tc_container_of(tc_list_back(&head), struct item, link), &it[3]);
    assert_int_equal(tc_container_of(tc_list_back(&head), struct item, link)->after, 1003);

    tc_list_remove(&it[2].link);
    assert_true(tc_list_empty(&it[2].link)); /* removed node is unlinked */
    {
        const int want[] = {0, 1, 3};
        assert_list(&head, want, 3);
    }
    assert_ptr_equal(tc_list_pop_front(&head), &it[0].link);
    {
        const int want[] = {1, 3};
        assert_list(&head, want, 2);
    }
    tc_list_push_back(&head, &it[4].link);
    tc_list_push_back(&head, &it[5].link);
    tc_list_push_front(&head, &it[2].link);
    /* remove the odd values while iterating */
    tc_list_for_each_safe(pos, tmp, &head)
    {
        if (tc_container_of(pos, struct item, link)->value % 2 == 1)
            tc_list_remove(pos);
    }
    {
        const int want[] = {2, 4};
        assert_list(&head, want, 2);
    }
    while (tc_list_pop_front(&head) != NULL) {
    }
    assert_list(&head, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
