/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit test of the intrusive AVL tree against a sorted-array model.
 */
#include "sc-tree.h"
#include "sc-test.h"

#include <glib.h>
#include <stdint.h>

typedef struct Item {
    SCTreeNode node;
    uint32_t key;
    uint32_t serial;            /* tells equal keys apart */
} Item;

static int item_cmp(const SCTreeNode *a, const SCTreeNode *b)
{
    const Item *x = SC_CONTAINER_OF(a, Item, node);
    const Item *y = SC_CONTAINER_OF(b, Item, node);

    return x->key < y->key ? -1 : x->key > y->key;
}

static int item_key_cmp(const void *key, const SCTreeNode *n)
{
    uint32_t k = *(const uint32_t *)key;
    const Item *x = SC_CONTAINER_OF(n, Item, node);

    return k < x->key ? -1 : k > x->key;
}

static gint model_cmp(gconstpointer a, gconstpointer b)
{
    const Item *x = *(Item *const *)a;
    const Item *y = *(Item *const *)b;

    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static void check_against(SCTree *t, GPtrArray *model)
{
    SCTreeNode *n;
    guint i = 0;

    sc_assert(sc_tree_check(t, item_cmp));
    sc_assert_cmpu(t->count, ==, model->len);
    g_ptr_array_sort(model, model_cmp);
    for (n = sc_tree_first(t); n; n = sc_tree_next(n), i++) {
        Item *it = SC_CONTAINER_OF(n, Item, node);

        /* equal keys keep insertion order */
        sc_assert(it == g_ptr_array_index(model, i));
    }
    sc_assert_cmpu(i, ==, model->len);
    i = model->len;
    for (n = sc_tree_last(t); n; n = sc_tree_prev(n)) {
        sc_assert(SC_CONTAINER_OF(n, Item, node) ==
                      g_ptr_array_index(model, --i));
    }
}

static void test_random_ops(void)
{
    GRand *r = g_rand_new_with_seed(1234);
    GPtrArray *model = g_ptr_array_new();
    SCTree t;
    uint32_t serial = 0;
    int round;

    sc_tree_init(&t);
    for (round = 0; round < 20000; round++) {
        if (model->len == 0 || g_rand_int_range(r, 0, 100) < 55) {
            Item *it = g_new0(Item, 1);

            it->key = g_rand_int_range(r, 0, 500);
            it->serial = serial++;
            sc_tree_insert(&t, &it->node, item_cmp);
            g_ptr_array_add(model, it);
        } else {
            guint i = g_rand_int_range(r, 0, model->len);
            Item *it = g_ptr_array_index(model, i);

            sc_tree_remove(&t, &it->node);
            sc_assert(!(sc_tree_linked(&it->node)));
            g_ptr_array_remove_index_fast(model, i);
            g_free(it);
        }
        if (round % 97 == 0) {
            check_against(&t, model);
        }
    }
    check_against(&t, model);
    while (model->len) {
        Item *it = g_ptr_array_steal_index(model, 0);

        sc_tree_remove(&t, &it->node);
        g_free(it);
    }
    sc_assert(!(t.root));
    g_ptr_array_unref(model);
    g_rand_free(r);
}

static void test_find(void)
{
    Item items[50];
    SCTree t;
    uint32_t k;
    int i;

    sc_tree_init(&t);
    for (i = 0; i < 50; i++) {
        items[i].key = 10 * i + 5;          /* 5, 15, ..., 495 */
        sc_tree_insert(&t, &items[i].node, item_cmp);
    }
    for (k = 0; k < 520; k++) {
        SCTreeNode *le = sc_tree_find_le(&t, &k, item_key_cmp);
        SCTreeNode *ge = sc_tree_find_ge(&t, &k, item_key_cmp);

        if (k < 5) {
            sc_assert(!(le));
        } else {
            sc_assert_cmpu(SC_CONTAINER_OF(le, Item, node)->key, ==,
                             MIN(495, (k - 5) / 10 * 10 + 5));
        }
        if (k > 495) {
            sc_assert(!(ge));
        } else {
            sc_assert_cmpu(SC_CONTAINER_OF(ge, Item, node)->key, ==,
                             k <= 5 ? 5 : (k + 4) / 10 * 10 + 5);
        }
    }
}

/* Heights stay logarithmic for sorted insertion (the worst case). */
static void test_balanced(void)
{
    enum { N = 1 << 16 };
    Item *items = g_new0(Item, N);
    SCTree t;
    int i;

    sc_tree_init(&t);
    for (i = 0; i < N; i++) {
        items[i].key = i;
        sc_tree_insert(&t, &items[i].node, item_cmp);
    }
    /* AVL: height < 1.45 log2(n + 2) */
    sc_assert_cmpi(t.root->height, <=, 24);
    sc_assert(sc_tree_check(&t, item_cmp));
    for (i = 0; i < N; i += 2) {
        sc_tree_remove(&t, &items[i].node);
    }
    sc_assert_cmpi(t.root->height, <=, 23);
    sc_assert(sc_tree_check(&t, item_cmp));
    g_free(items);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cache/tree/random-ops", test_random_ops);
    g_test_add_func("/cache/tree/find", test_find);
    g_test_add_func("/cache/tree/balanced", test_balanced);
    return g_test_run();
}
