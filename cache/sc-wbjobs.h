/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: the writeback jobs in flight (sc-wbjobs.c).
 *
 * Owns SCWbJobs.  Invariants:
 * - at most one job is in flight for any byte: a DIRTY extent under a job
 *   has @wb set, one holding newer data over an in-flight range has
 *   @blocked_by set, and neither is eligible (sc-extent.h);
 * - @by_start holds the jobs by range, @by_since by the oldest data they
 *   carry (what flush tickets wait for), @jobs by id;
 * - a job's @live bytes are still cached as its data; the rest (overwritten
 *   or dropped while in flight) are counted in @orphan_bytes until it ends;
 * - SCNode.wb_inflight counts each node's jobs in flight.
 *
 * Locking: none here.  The caller serialises every call into the core
 * (the driver holds its cache lock around each); nothing in this module
 * blocks, sleeps or reads a clock.
 */
#ifndef SC_WBJOBS_H
#define SC_WBJOBS_H

struct SCWbJob {
    uint64_t id;                /* first: the hash key */
    SCTreeNode range_node;      /* c->wbj.by_start */
    SCTreeNode since_node;      /* c->wbj.by_since */
    uint64_t start;
    uint64_t end;
    uint64_t live;              /* bytes still cached as this data */
    uint64_t min_since;
    int64_t min_dirtied_ns;
    uint32_t node;
    bool fua;
    uint64_t first_page;
    uint32_t npages;
    SCPage **pages;
    struct iovec *iov;
};

typedef struct SCWbJobs {
    SCTree by_start;
    SCTree by_since;
    GHashTable *jobs;           /* id -> SCWbJob */
    uint64_t inflight_bytes;
    uint64_t orphan_bytes;      /* in-flight bytes no longer cached */
} SCWbJobs;

SCWbJob *sc_wb_job_covering(SCCache *c, uint64_t off);
uint64_t sc_wb_boundary_after(SCCache *c, uint64_t off);
/* Oldest obligation (since) of the jobs overlapping [start, end). */
uint64_t sc_wb_min_since(SCCache *c, uint64_t start, uint64_t end);
void sc_wb_job_add(SCCache *c, SCWbJob *job);
void sc_wb_job_remove(SCCache *c, SCWbJob *job);
void sc_wb_job_orphan(SCCache *c, SCWbJob *job, uint64_t len);
void sc_wb_job_free(SCCache *c, SCWbJob *job);
/* Tree orders, shared with the consistency checker. */
int sc_job_start_cmp(const SCTreeNode *a, const SCTreeNode *b);
int sc_job_since_cmp(const SCTreeNode *a, const SCTreeNode *b);

#endif /* SC_WBJOBS_H */
