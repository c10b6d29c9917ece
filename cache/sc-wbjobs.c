/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the writeback jobs in flight (SCWbJobs, sc-wbjobs.h), by
 * range and by the oldest data they carry.  Below the writeback planner,
 * the flush tickets and the write-arounds, which all ask what is in
 * flight over a range; it calls nothing above the page store.
 */
#include "sc-internal.h"

int sc_job_start_cmp(const SCTreeNode *a, const SCTreeNode *b)
{
    const SCWbJob *x = SC_CONTAINER_OF(a, SCWbJob, range_node);
    const SCWbJob *y = SC_CONTAINER_OF(b, SCWbJob, range_node);

    return x->start < y->start ? -1 : x->start > y->start;
}

static int job_start_key(const void *key, const SCTreeNode *n)
{
    uint64_t off = *(const uint64_t *)key;
    const SCWbJob *j = SC_CONTAINER_OF(n, SCWbJob, range_node);

    return off < j->start ? -1 : off > j->start;
}

int sc_job_since_cmp(const SCTreeNode *a, const SCTreeNode *b)
{
    const SCWbJob *x = SC_CONTAINER_OF(a, SCWbJob, since_node);
    const SCWbJob *y = SC_CONTAINER_OF(b, SCWbJob, since_node);

    if (x->min_since != y->min_since) {
        return x->min_since < y->min_since ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

SCWbJob *sc_wb_job_covering(SCCache *c, uint64_t off)
{
    SCTreeNode *n = sc_tree_find_le(&c->wbj.by_start, &off, job_start_key);
    SCWbJob *j = n ? SC_CONTAINER_OF(n, SCWbJob, range_node) : NULL;

    return j && j->end > off ? j : NULL;
}

/* The first start or end of an in-flight job after @off, or UINT64_MAX. */
uint64_t sc_wb_boundary_after(SCCache *c, uint64_t off)
{
    SCWbJob *j = sc_wb_job_covering(c, off);
    SCTreeNode *n;

    if (j) {
        return j->end;
    }
    n = sc_tree_find_ge(&c->wbj.by_start, &off, job_start_key);
    return n ? SC_CONTAINER_OF(n, SCWbJob, range_node)->start : UINT64_MAX;
}

static SCWbJob *job_of_range(SCTreeNode *n)
{
    return n ? SC_CONTAINER_OF(n, SCWbJob, range_node) : NULL;
}

/* Oldest obligation of the in-flight jobs overlapping [start, end). */
uint64_t sc_wb_min_since(SCCache *c, uint64_t start, uint64_t end)
{
    SCWbJob *j = sc_wb_job_covering(c, start);
    uint64_t m = UINT64_MAX;

    if (!j) {
        uint64_t next = sc_wb_boundary_after(c, start);

        j = next < end ? sc_wb_job_covering(c, next) : NULL;
    }
    for (; j && j->start < end;
         j = job_of_range(sc_tree_next(&j->range_node))) {
        m = MIN(m, j->min_since);
    }
    return m;
}

/* @job goes in flight: indexed, counted on its node and in the bytes. */
void sc_wb_job_add(SCCache *c, SCWbJob *job)
{
    sc_tree_insert(&c->wbj.by_start, &job->range_node, sc_job_start_cmp);
    sc_tree_insert(&c->wbj.by_since, &job->since_node, sc_job_since_cmp);
    g_hash_table_insert(c->wbj.jobs, &job->id, job);
    c->nodes[job->node].wb_inflight++;
    c->wbj.inflight_bytes += job->end - job->start;
}

/* @job has ended: out of the indexes and the counts; not freed. */
void sc_wb_job_remove(SCCache *c, SCWbJob *job)
{
    uint64_t len = job->end - job->start;

    g_hash_table_remove(c->wbj.jobs, &job->id);
    sc_tree_remove(&c->wbj.by_start, &job->range_node);
    sc_tree_remove(&c->wbj.by_since, &job->since_node);
    c->nodes[job->node].wb_inflight--;
    c->wbj.inflight_bytes -= len;
    c->wbj.orphan_bytes -= len - job->live;
}

/*
 * @len bytes of @job's data are no longer cached (overwritten or dropped
 * while it is in flight): the job still sends them.
 */
void sc_wb_job_orphan(SCCache *c, SCWbJob *job, uint64_t len)
{
    job->live -= len;
    c->wbj.orphan_bytes += len;
}

void sc_wb_job_free(SCCache *c, SCWbJob *job)
{
    uint32_t k;

    for (k = 0; k < job->npages; k++) {
        sc_page_unref(c, job->pages[k]);
    }
    g_free(job->pages);
    g_free(job->iov);
    g_free(job);
}
