/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the life of a fetch job (SCFetchState, sc-fetch.h): made
 * with pages of its own, registered, queued for prefetch or handed out,
 * and freed.  Below the extent map, which drops a job nobody waits for
 * any more; what a job does to extents (claiming, installing, cancelling)
 * is above, in sc-read.c and sc-evict.c.
 */
#include "sc-internal.h"

SCFetchJob *sc_fetch_job_new(SCCache *c, uint64_t start, uint64_t end,
                             bool prefetch)
{
    SCFetchJob *job = g_new0(SCFetchJob, 1);
    uint32_t k;

    job->id = c->next_job_id++;
    job->start = start;
    job->end = end;
    job->node = sc_node_of(c, start);
    job->prefetch = prefetch;
    job->queue_link.data = job;
    job->first_page = sc_page_index(c, start);
    job->npages = sc_pages_spanned(c, start, end);
    job->pages = g_new(SCPage *, job->npages);
    job->iov = g_new(struct iovec, job->npages);
    for (k = 0; k < job->npages; k++) {
        job->pages[k] = sc_page_alloc(c, job->first_page + k);
    }
    sc_job_iov_build(c, start, end, job->pages, job->iov);
    c->fetch.mem_bytes += job->npages * c->page_size;
    if (prefetch) {
        c->fetch.prefetch_mem_bytes += job->npages * c->page_size;
    }
    g_hash_table_insert(c->fetch.jobs, &job->id, job);
    return job;
}

void sc_fetch_job_free(SCCache *c, SCFetchJob *job)
{
    uint32_t k;

    g_hash_table_remove(c->fetch.jobs, &job->id);
    for (k = 0; k < job->npages; k++) {
        if (job->pages[k]) {
            c->fetch.mem_bytes -= c->page_size;
            if (job->prefetch) {
                c->fetch.prefetch_mem_bytes -= c->page_size;
            }
            sc_page_unref(c, job->pages[k]);
        }
    }
    g_free(job->pages);
    g_free(job->iov);
    g_free(job);
}

/* Queue prefetch job @job on its node, behind the ones queued before. */
void sc_fetch_job_queue(SCCache *c, SCFetchJob *job)
{
    g_queue_push_tail_link(&c->nodes[job->node].prefetch_queue,
                           &job->queue_link);
    c->fetch.queued++;
}

/* Take queued prefetch job @job off its node's queue. */
void sc_fetch_job_unqueue(SCCache *c, SCFetchJob *job)
{
    g_queue_unlink(&c->nodes[job->node].prefetch_queue, &job->queue_link);
    c->fetch.queued--;
}

/*
 * A job that was never handed out and that no extent waits for any more:
 * off its node's prefetch queue (if queued), and freed.
 */
void sc_fetch_job_discard(SCCache *c, SCFetchJob *job)
{
    g_assert(!job->issued && job->waiting == 0);
    sc_fetch_job_unqueue(c, job);
    sc_fetch_job_free(c, job);
}
