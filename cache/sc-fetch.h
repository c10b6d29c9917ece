/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: fetch jobs (sc-fetchjob.c; sc-read.c issues and completes
 * them): reads of the nodes that fill the cache, for a reader or as
 * prefetch.
 *
 * Owns SCFetchState.  Invariants:
 * - a job's pages are its own until it completes: nothing else sees them,
 *   and completion adopts or copies only the bytes still FETCHING for it
 *   (@waiting counts them; a job nobody waits for is only cancelled);
 * - a queued prefetch job is in its node's prefetch queue and not issued;
 *   @queued counts them all, so that finding none costs O(1), not a look
 *   at every node;
 * - @mem_bytes and @prefetch_mem_bytes count the pages jobs own.
 *
 * Locking: none here.  The caller serialises every call into the core
 * (the driver holds its cache lock around each); nothing in this module
 * blocks, sleeps or reads a clock.
 */
#ifndef SC_FETCH_H
#define SC_FETCH_H

struct SCFetchJob {
    uint64_t id;                /* first: the hash key */
    uint64_t start;
    uint64_t end;
    uint64_t waiting;           /* bytes of FETCHING extents for it */
    uint64_t handout_call;      /* sc_read call that handed it out */
    uint32_t node;
    bool prefetch;
    bool issued;                /* handed to the caller */
    GList queue_link;           /* queued prefetch: node's queue */
    uint64_t first_page;
    uint32_t npages;
    SCPage **pages;             /* NULL once adopted by the store */
    struct iovec *iov;
};

typedef struct SCFetchState {
    GHashTable *jobs;           /* id -> SCFetchJob */
    uint64_t issued;            /* handed to the caller, not completed */
    uint64_t queued;            /* in the nodes' prefetch queues */
    uint64_t mem_bytes;         /* pages owned by fetch jobs */
    uint64_t prefetch_mem_bytes;
    uint64_t read_call;         /* sc_read calls so far */
    uint32_t prefetch_rr;       /* next node to take prefetch from */
} SCFetchState;

/* sc-read.c: fetch jobs and prefetch */
/* sc-fetchjob.c: a job's life */
SCFetchJob *sc_fetch_job_new(SCCache *c, uint64_t start, uint64_t end,
                             bool prefetch);
void sc_fetch_job_free(SCCache *c, SCFetchJob *job);
void sc_fetch_job_discard(SCCache *c, SCFetchJob *job);
void sc_fetch_job_queue(SCCache *c, SCFetchJob *job);
void sc_fetch_job_unqueue(SCCache *c, SCFetchJob *job);

#endif /* SC_FETCH_H */
