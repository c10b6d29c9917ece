/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: intrusive AVL tree (see sc-tree.h).
 *
 * Rebalancing always retraces to the root: that keeps the code short and
 * is still O(log n).
 */
#include "sc-tree.h"

#include <glib.h>

void sc_tree_init(SCTree *t)
{
    t->root = NULL;
    t->count = 0;
}

static int height(const SCTreeNode *n)
{
    return n ? n->height : 0;
}

static void update_height(SCTreeNode *n)
{
    n->height = 1 + MAX(height(n->left), height(n->right));
}

/* Put @new where @old hangs below @parent (or at the root). */
static void replace_child(SCTree *t, SCTreeNode *parent, SCTreeNode *old,
                          SCTreeNode *new)
{
    if (!parent) {
        t->root = new;
    } else if (parent->left == old) {
        parent->left = new;
    } else {
        parent->right = new;
    }
    if (new) {
        new->parent = parent;
    }
}

static SCTreeNode *rotate_left(SCTree *t, SCTreeNode *x)
{
    SCTreeNode *y = x->right;

    x->right = y->left;
    if (y->left) {
        y->left->parent = x;
    }
    replace_child(t, x->parent, x, y);
    y->left = x;
    x->parent = y;
    update_height(x);
    update_height(y);
    return y;
}

static SCTreeNode *rotate_right(SCTree *t, SCTreeNode *x)
{
    SCTreeNode *y = x->left;

    x->left = y->right;
    if (y->right) {
        y->right->parent = x;
    }
    replace_child(t, x->parent, x, y);
    y->right = x;
    x->parent = y;
    update_height(x);
    update_height(y);
    return y;
}

/* Restore balance at @n; returns the root of the subtree now at its place */
static SCTreeNode *rebalance(SCTree *t, SCTreeNode *n)
{
    int balance = height(n->left) - height(n->right);

    if (balance > 1) {
        if (height(n->left->left) < height(n->left->right)) {
            rotate_left(t, n->left);
        }
        return rotate_right(t, n);
    }
    if (balance < -1) {
        if (height(n->right->right) < height(n->right->left)) {
            rotate_right(t, n->right);
        }
        return rotate_left(t, n);
    }
    update_height(n);
    return n;
}

static void retrace(SCTree *t, SCTreeNode *n)
{
    while (n) {
        n = rebalance(t, n);
        n = n->parent;
    }
}

void sc_tree_insert(SCTree *t, SCTreeNode *n, SCTreeCmp cmp)
{
    SCTreeNode *parent = NULL;
    SCTreeNode **link = &t->root;

    while (*link) {
        parent = *link;
        if (cmp(n, parent) < 0) {
            link = &parent->left;
        } else {
            link = &parent->right;
        }
    }
    n->parent = parent;
    n->left = NULL;
    n->right = NULL;
    n->height = 1;
    *link = n;
    t->count++;
    retrace(t, parent);
}

static SCTreeNode *leftmost(SCTreeNode *n)
{
    while (n->left) {
        n = n->left;
    }
    return n;
}

static SCTreeNode *rightmost(SCTreeNode *n)
{
    while (n->right) {
        n = n->right;
    }
    return n;
}

void sc_tree_remove(SCTree *t, SCTreeNode *n)
{
    SCTreeNode *from;

    g_assert(sc_tree_linked(n));
    if (n->left && n->right) {
        SCTreeNode *s = leftmost(n->right);

        if (s->parent == n) {
            /* The successor is our right child: it keeps its right side. */
            replace_child(t, n->parent, n, s);
            s->left = n->left;
            s->left->parent = s;
            from = s;
        } else {
            from = s->parent;
            from->left = s->right;
            if (s->right) {
                s->right->parent = from;
            }
            replace_child(t, n->parent, n, s);
            s->left = n->left;
            s->left->parent = s;
            s->right = n->right;
            s->right->parent = s;
        }
        s->height = n->height;
    } else {
        SCTreeNode *child = n->left ? n->left : n->right;

        from = n->parent;
        replace_child(t, from, n, child);
    }
    retrace(t, from);
    n->parent = NULL;
    n->left = NULL;
    n->right = NULL;
    n->height = 0;
    t->count--;
}

SCTreeNode *sc_tree_first(const SCTree *t)
{
    return t->root ? leftmost(t->root) : NULL;
}

SCTreeNode *sc_tree_last(const SCTree *t)
{
    return t->root ? rightmost(t->root) : NULL;
}

SCTreeNode *sc_tree_next(const SCTreeNode *n)
{
    if (n->right) {
        return leftmost(n->right);
    }
    while (n->parent && n->parent->right == n) {
        n = n->parent;
    }
    return n->parent;
}

SCTreeNode *sc_tree_prev(const SCTreeNode *n)
{
    if (n->left) {
        return rightmost(n->left);
    }
    while (n->parent && n->parent->left == n) {
        n = n->parent;
    }
    return n->parent;
}

SCTreeNode *sc_tree_find_le(const SCTree *t, const void *key,
                            SCTreeKeyCmp cmp)
{
    SCTreeNode *cur = t->root;
    SCTreeNode *best = NULL;

    while (cur) {
        if (cmp(key, cur) >= 0) {
            best = cur;
            cur = cur->right;
        } else {
            cur = cur->left;
        }
    }
    return best;
}

SCTreeNode *sc_tree_find_ge(const SCTree *t, const void *key,
                            SCTreeKeyCmp cmp)
{
    SCTreeNode *cur = t->root;
    SCTreeNode *best = NULL;

    while (cur) {
        if (cmp(key, cur) <= 0) {
            best = cur;
            cur = cur->left;
        } else {
            cur = cur->right;
        }
    }
    return best;
}

/* Returns the height of the subtree, or -1 if it is broken. */
static int check_subtree(const SCTreeNode *n, const SCTreeNode *parent,
                         size_t *count)
{
    int hl, hr;

    if (!n) {
        return 0;
    }
    if (n->parent != parent) {
        return -1;
    }
    hl = check_subtree(n->left, n, count);
    hr = check_subtree(n->right, n, count);
    if (hl < 0 || hr < 0 || hl - hr > 1 || hr - hl > 1 ||
        n->height != 1 + MAX(hl, hr)) {
        return -1;
    }
    (*count)++;
    return n->height;
}

bool sc_tree_check(const SCTree *t, SCTreeCmp cmp)
{
    size_t count = 0;
    const SCTreeNode *n, *prev = NULL;

    if (check_subtree(t->root, NULL, &count) < 0 || count != t->count) {
        return false;
    }
    for (n = sc_tree_first(t); n; n = sc_tree_next(n)) {
        if (prev && cmp(prev, n) > 0) {
            return false;
        }
        prev = n;
    }
    return true;
}
