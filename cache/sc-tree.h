/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: intrusive AVL tree.
 *
 * The cache keeps the same extent in several orders at once (by offset, by
 * dirty age, per node), so the tree nodes are embedded in the objects
 * instead of being allocated per insertion as GTree does.  Every operation
 * is O(log n); next/prev walk in O(1) amortized.  Keys live in the objects;
 * callers pass comparison functions.
 */
#ifndef SC_TREE_H
#define SC_TREE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct SCTreeNode {
    struct SCTreeNode *parent;
    struct SCTreeNode *left;
    struct SCTreeNode *right;
    int height;                 /* 0 while not linked into a tree */
} SCTreeNode;

typedef struct SCTree {
    SCTreeNode *root;
    size_t count;
} SCTree;

/* Order of two linked objects: <0, 0 or >0. */
typedef int (*SCTreeCmp)(const SCTreeNode *a, const SCTreeNode *b);

/* Order of a search key relative to a linked object: <0, 0 or >0. */
typedef int (*SCTreeKeyCmp)(const void *key, const SCTreeNode *n);

#define SC_CONTAINER_OF(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))

void sc_tree_init(SCTree *t);

static inline bool sc_tree_linked(const SCTreeNode *n)
{
    return n->height != 0;
}

/* Insert @n; equal keys go after the existing ones. */
void sc_tree_insert(SCTree *t, SCTreeNode *n, SCTreeCmp cmp);
void sc_tree_remove(SCTree *t, SCTreeNode *n);

SCTreeNode *sc_tree_first(const SCTree *t);
SCTreeNode *sc_tree_last(const SCTree *t);
SCTreeNode *sc_tree_next(const SCTreeNode *n);
SCTreeNode *sc_tree_prev(const SCTreeNode *n);

/* The last node that is <= @key, or NULL. */
SCTreeNode *sc_tree_find_le(const SCTree *t, const void *key,
                            SCTreeKeyCmp cmp);
/* The first node that is >= @key, or NULL. */
SCTreeNode *sc_tree_find_ge(const SCTree *t, const void *key,
                            SCTreeKeyCmp cmp);

/*
 * Verify ordering, parent links, heights, balance and count.  For tests;
 * O(n).
 */
bool sc_tree_check(const SCTree *t, SCTreeCmp cmp);

#endif /* SC_TREE_H */
