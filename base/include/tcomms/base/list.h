/**
 * @file list.h
 * @brief An intrusive circular doubly linked list (header only, not thread-safe).
 *
 * Embed a ::tc_list_t in a struct and get the struct back with
 * tc_container_of(). The head is a ::tc_list_t that is not part of an element.
 */
#ifndef TCOMMS_BASE_LIST_H
#define TCOMMS_BASE_LIST_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The struct of type @p type whose member @p member is at @p ptr. */
#define tc_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/** @brief A list link, or the head of a list. */
typedef struct tc_list {
    struct tc_list *prev; /**< previous link (the head's prev is the last element) */
    struct tc_list *next; /**< next link (the head's next is the first element) */
} tc_list_t;

/**
 * @brief Make an empty list (or an unlinked node).
 * @param head the head or node.
 */
static inline void tc_list_init(tc_list_t *head)
{
    head->prev = head;
    head->next = head;
}

/**
 * @brief Whether a list is empty (or a node unlinked).
 * @param head the head or node.
 * @return true when empty.
 */
static inline bool tc_list_empty(const tc_list_t *head)
{
    return head->next == head;
}

/**
 * @brief Link a node between two adjacent links (helper of the push functions).
 * @param node the node to insert.
 * @param prev the link before it.
 * @param next the link after it.
 */
static inline void tc_list_insert_between(tc_list_t *node, tc_list_t *prev, tc_list_t *next)
{
    node->prev = prev;
    node->next = next;
    prev->next = node;
    next->prev = node;
}

/**
 * @brief Append a node at the end.
 * @param head the list.
 * @param node an unlinked node.
 */
static inline void tc_list_push_back(tc_list_t *head, tc_list_t *node)
{
    tc_list_insert_between(node, head->prev, head);
}

/**
 * @brief Insert a node at the front.
 * @param head the list.
 * @param node an unlinked node.
 */
static inline void tc_list_push_front(tc_list_t *head, tc_list_t *node)
{
    tc_list_insert_between(node, head, head->next);
}

/**
 * @brief Unlink a node from its list; it becomes an unlinked node.
 * @param node a linked node.
 */
static inline void tc_list_remove(tc_list_t *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    tc_list_init(node);
}

/**
 * @brief The first node.
 * @param head the list.
 * @return the node, or NULL when empty.
 */
static inline tc_list_t *tc_list_front(const tc_list_t *head)
{
    return tc_list_empty(head) ? NULL : head->next;
}

/**
 * @brief The last node.
 * @param head the list.
 * @return the node, or NULL when empty.
 */
static inline tc_list_t *tc_list_back(const tc_list_t *head)
{
    return tc_list_empty(head) ? NULL : head->prev;
}

/**
 * @brief Unlink the first node.
 * @param head the list.
 * @return the node, or NULL when empty.
 */
static inline tc_list_t *tc_list_pop_front(tc_list_t *head)
{
    tc_list_t *node = tc_list_front(head);

    if (node != NULL)
        tc_list_remove(node);
    return node;
}

/**
 * @brief Number of nodes (walks the list: O(n)).
 * @param head the list.
 * @return the count.
 */
static inline size_t tc_list_length(const tc_list_t *head)
{
    size_t n = 0;

    for (const tc_list_t *p = head->next; p != head; p = p->next)
        n++;
    return n;
}

/** @brief Iterate @p pos over the nodes; the list must not change meanwhile. */
#define tc_list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/** @brief Iterate @p pos over the nodes; @p pos may be removed inside the loop. */
#define tc_list_for_each_safe(pos, tmp, head)                                                      \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                               \
         (pos) = (tmp), (tmp) = (pos)->next)

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_LIST_H */
