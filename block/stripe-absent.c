/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block driver "stripe": opening a replicated image without a node that
 * cannot be opened (its target gone, its LUN offline), as md starts an
 * array degraded.  Without this, neither a restart nor the destination of
 * a migration could run on the disk until the node answered.
 *
 * A node given inline (nodes.N.driver=..., a filename) whose open fails
 * gets a stand-in: a null-co node that is never read or written, so that
 * every node index keeps its BdrvChild and no path needs a NULL check.
 * The node is failed from the start: the other copies serve its data, and
 * the first write marks it failed in the live nodes' headers, as for a
 * node that fails a request.  The image opens only while every stripe
 * unit keeps a copy on a node that is not failed (stripe_assemble_absent());
 * otherwise the node's own open error is reported, as without copies.  A
 * node given by reference (nodes.N=node-name) was opened by the user, who
 * saw its error: a name that refers to nothing stays an error.
 *
 * The stand-in keeps what the user gave (the node's options and filename):
 * the image's filename and options (a snapshot's backing file, what a
 * migration's destination opens) still name the real node, and messages
 * name it too.  It is never brought back by a resync, which would take
 * the stand-in's zeroes for data: the real node comes back at the next
 * open, or with stripe-node-replace (a node of this image at that index is
 * resynced, only the regions it missed).
 */

#include "qemu/osdep.h"
#include "block/block_int.h"
#include "qapi/error.h"
#include "block/qdict.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qemu/cutils.h"
#include "stripe.h"
#include "trace.h"

void stripe_absent_node_free(StripeAbsentNode *a)
{
    if (a) {
        qobject_unref(a->opts);
        error_free(a->why);
        g_free(a->name);
        g_free(a);
    }
}

/* The absent nodes of a failed open, per position. */
void stripe_absent_free_given(StripeAbsentNode **absent, uint32_t count)
{
    uint32_t i;

    for (i = 0; i < count; i++) {
        stripe_absent_node_free(absent[i]);
        absent[i] = NULL;
    }
}

/* What the user gave for the node at @key, before opening it consumes it. */
static StripeAbsentNode *stripe_absent_capture(QDict *options,
                                               const char *key,
                                               const char *filename)
{
    g_autofree char *prefix = g_strconcat(key, ".", NULL);
    g_autoptr(QDict) flat = qdict_clone_shallow(options);
    g_autoptr(QDict) sub = NULL;
    StripeAbsentNode *a = g_new0(StripeAbsentNode, 1);
    QObject *nested;

    qdict_extract_subqdict(flat, &sub, prefix);
    nested = qdict_crumple(sub, NULL);
    a->opts = nested ? qobject_to(QDict, nested) : qobject_ref(sub);
    if (filename) {
        a->name = g_strdup(filename);
    } else {
        GString *json = qobject_to_json(QOBJECT(a->opts));

        a->name = g_strdup_printf("json:%s", json->str);
        g_string_free(json, true);
    }
    return a;
}

/*
 * Open the node at @key (nodes.N).  A node given inline that fails to
 * open gets a stand-in, and *@absent what the user gave and why it
 * failed; the caller decides whether the image can do without it.
 * @filename: the node's filename as given, if any.
 */
BdrvChild *stripe_open_node(BlockDriverState *bs, QDict *options,
                            const char *key, const char *filename,
                            StripeAbsentNode **absent, Error **errp)
{
    g_autofree char *prefix = g_strconcat(key, ".", NULL);
    g_autofree char *dkey = g_strconcat(prefix, "driver", NULL);
    g_autofree char *zkey = g_strconcat(prefix, "read-zeroes", NULL);
    StripeAbsentNode *a = NULL;
    Error *why = NULL;
    BdrvChild *child;

    *absent = NULL;
    if (!qdict_haskey(options, key)) {
        a = stripe_absent_capture(options, key, filename);
    }
    /* The header is metadata: this role also keeps nodes from probing. */
    child = bdrv_open_child(NULL, options, key, bs, &stripe_node_class,
                            BDRV_CHILD_DATA | BDRV_CHILD_METADATA, false,
                            &why);
    if (child || !a) {
        stripe_absent_node_free(a);
        error_propagate(errp, why);
        return child;
    }

    qdict_put_str(options, dkey, "null-co");
    qdict_put_bool(options, zkey, true);
    child = bdrv_open_child(NULL, options, key, bs, &stripe_node_class,
                            BDRV_CHILD_DATA | BDRV_CHILD_METADATA, false,
                            errp);
    if (!child) {
        stripe_absent_node_free(a);
        error_free(why);
        return NULL;
    }
    a->why = why;
    *absent = a;
    return child;
}

/*
 * The local file that the node given as @a names, if any: its filename,
 * for the file or host_device driver or none (probed), or that of the
 * "file" below a format or filter node.
 */
static const char *stripe_absent_path(StripeAbsentNode *a)
{
    QDict *opts = a->opts;
    int depth;

    for (depth = 0; opts && depth < STRIPE_NODE_FILE_DEPTH; depth++) {
        const char *driver = qdict_get_try_str(opts, "driver");
        const char *filename = qdict_get_try_str(opts, "filename");

        if (filename && (!driver || !strcmp(driver, "file") ||
                         !strcmp(driver, "host_device"))) {
            strstart(filename, "file:", &filename);
            return filename;
        }
        opts = qdict_get_qdict(opts, "file");
    }
    return NULL;
}

static const char *stripe_node_path(BlockDriverState *bs) GRAPH_RDLOCK;

/* The local file under node @bs (below formats and filters), if any. */
static const char *stripe_node_path(BlockDriverState *bs)
{
    int depth;

    for (depth = 0; bs && depth < STRIPE_NODE_FILE_DEPTH; depth++) {
        if (bs->drv && (!strcmp(bs->drv->format_name, "file") ||
                        !strcmp(bs->drv->format_name, "host_device"))) {
            return bs->filename;
        }
        bs = bs->file ? bs->file->bs : NULL;
    }
    return NULL;
}

/*
 * Whether the node at position @pos, which could not be opened, is a node
 * opened before it (@given[0..pos-1]) under another name: a symlink, a
 * hard link, a path with "/./".  Then file locking refused the second
 * open, and taking the node as absent would mark a healthy node failed
 * in the headers: the image must not open.  Sets @errp naming both.
 */
bool stripe_absent_is_twin(BdrvChild **given, StripeAbsentNode **absent,
                           uint32_t pos, Error **errp)
{
    const char *path = stripe_absent_path(absent[pos]);
    struct stat st, other;
    uint32_t i;

    GRAPH_RDLOCK_GUARD_MAINLOOP();

    if (!path || stat(path, &st) < 0) {
        return false;
    }
    for (i = 0; i < pos; i++) {
        const char *opened = absent[i] ? NULL : stripe_node_path(given[i]->bs);

        if (opened && stat(opened, &other) == 0 &&
            st.st_dev == other.st_dev && st.st_ino == other.st_ino) {
            error_setg(errp, "stripe: node %u (%s) is node %u (%s) under "
                       "another name: copies on one storage are no "
                       "redundancy; give each node once", pos,
                       absent[pos]->name, i, given[i]->bs->filename);
            return true;
        }
    }
    return false;
}

/* The bit per position of the nodes in @absent (per position) not NULL. */
uint64_t stripe_absent_positions(StripeAbsentNode **absent, uint32_t count)
{
    uint64_t mask = 0;
    uint32_t i;

    for (i = 0; i < count; i++) {
        if (absent[i]) {
            mask |= UINT64_C(1) << i;
        }
    }
    return mask;
}

/*
 * The image cannot do without the absent node at position @pos: its own
 * open error, and with copies why the others are not enough (@why_not).
 */
void stripe_absent_refuse(StripeAbsentNode **absent, uint32_t pos,
                          const char *why_not, Error **errp)
{
    ERRP_GUARD();
    StripeAbsentNode *a = absent[pos];

    error_propagate(errp, a->why);
    a->why = NULL;
    error_prepend(errp, "stripe: node %u: ", pos);
    if (why_not) {
        error_append_hint(errp, "The other nodes are not enough: %s\n",
                          why_not);
    }
}

/*
 * Keep the absent nodes (per position in @absent, taken over) by node
 * index, failed, and say so.
 */
void stripe_absent_adopt(BlockDriverState *bs, StripeAbsentNode **absent)
{
    BDRVStripeState *s = bs->opaque;
    uint32_t i;

    s->absent_nodes = g_new0(StripeAbsentNode *, s->node_count);
    for (i = 0; i < s->node_count; i++) {
        StripeAbsentNode *a = absent[s->given_pos[i]];

        if (!a) {
            continue;
        }
        absent[s->given_pos[i]] = NULL;
        s->absent_nodes[i] = a;
        s->absent |= UINT64_C(1) << i;
        s->failed |= UINT64_C(1) << i;
        warn_report("stripe: node %u (%s) cannot be opened (%s); it is "
                    "taken as node index %u, failed: the disk goes on with "
                    "the other copies of its data, and resyncs it when it "
                    "is given again (next open, or stripe-node-replace)",
                    s->given_pos[i], a->name, error_get_pretty(a->why), i);
        trace_stripe_absent_node(bs, s->given_pos[i], i);
        error_free(a->why);
        a->why = NULL;
    }
}

/*
 * The real node @i took the stand-in's place.  What stood in is kept
 * until close: a request in another thread may have just seen the bit and
 * be naming the node.
 */
void stripe_absent_forget(BDRVStripeState *s, uint32_t i)
{
    qatomic_and(&s->absent, ~(UINT64_C(1) << i));
}

void stripe_absent_free_all(BDRVStripeState *s)
{
    uint32_t i;

    for (i = 0; s->absent_nodes && i < s->node_count; i++) {
        stripe_absent_node_free(s->absent_nodes[i]);
    }
    g_free(s->absent_nodes);
    s->absent_nodes = NULL;
    s->absent = 0;
}

/* How messages name node index @i: as the user gave it. */
const char *stripe_node_name(BDRVStripeState *s, uint32_t i)
{
    if (stripe_node_absent(s, i)) {
        return s->absent_nodes[i]->name;
    }
    return s->nodes[i]->bs->filename;
}

/* The exact filename of node index @i ("" when it has none). */
const char *stripe_node_exact_filename(BDRVStripeState *s, uint32_t i)
{
    if (stripe_node_absent(s, i)) {
        const char *name = s->absent_nodes[i]->name;

        return g_str_has_prefix(name, "json:") ? "" : name;
    }
    return s->nodes[i]->bs->exact_filename;
}

/* The options that open node index @i (a new reference). */
QDict *stripe_node_open_options(BDRVStripeState *s, uint32_t i)
{
    if (stripe_node_absent(s, i)) {
        return qobject_ref(s->absent_nodes[i]->opts);
    }
    return qobject_ref(s->nodes[i]->bs->full_open_options);
}
