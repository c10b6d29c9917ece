/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stripe-cache: staged writes (sc-staged.c), rewrites of dirty data whose
 * copy the caller makes outside its lock.
 *
 * A write that only rewrites whole pages of one dirty extent that no job
 * sends changes no state, only bytes.  Such a write is staged: under the
 * lock its pages get a writer count, and the caller copies the data in and
 * publishes it with no lock held.  Owns SCStaged and SCPage.writers.
 * Invariants:
 * - a page with @writers > 0 is a store page wholly inside one DIRTY
 *   extent, pinned by no job; it stays so until published, because
 *   nothing else may write, drop or send it: other writes to it are
 *   SC_WRITE_BLOCKED (a copy on write would leave the writer's bytes in
 *   the old copy), write-arounds wait (sc_around_begin() returns NULL; a
 *   drop would free the page under the copy), eviction never drops dirty
 *   data, and the planner does not build a job with it (it would send
 *   bytes half copied, then mark them clean).  So a staged write needs no
 *   page reference, and publishing takes no lock;
 * - a page is never both staged and read (SCPage.readers): a page with
 *   readers is not staged, and a read of a staged page is refused
 *   (sc_read_pinned() returns false) and retries in a moment, as a
 *   refused write does.  Otherwise the read would copy bytes the
 *   publisher is writing;
 * - a refused planner sets @waiting, so that the publisher tells its
 *   caller to collect jobs and wake the waiters again (a flush may wait
 *   for that job); a write or write-around refused for a staged page
 *   retries in a moment instead (SCWriteResult.staged);
 * - while @hold is set (the last planner pass was refused) nothing new is
 *   staged, so continual rewrites cannot keep a page from the nodes.
 *
 * Locking: staging, sc_staged_busy() and @hold are under the caller's
 * lock like every other call into the core.  sc_staged_fill() and
 * sc_staged_publish() run without it and touch only the staged pages'
 * bytes and the atomic fields @waiting and SCPage.writers, so one side
 * always sees the other (glib's atomics are sequentially consistent): a
 * refused party sets @waiting before it reads @writers again, a publisher
 * decrements @writers before it reads @waiting.
 */
#ifndef SC_STAGED_H
#define SC_STAGED_H

/*
 * On a cache line of its own: every publisher reads @waiting, from any
 * thread, and it must not share a line with what the lock holder writes.
 */
typedef struct SCStaged {
    _Alignas(64) int waiting;   /* atomic: refused for a staged page */
    bool hold;                  /* stage nothing: the planner was refused */
} SCStaged;

/* sc-staged.c, under the caller's lock */
bool sc_staged_begin(SCCache *c, uint64_t start, uint64_t end,
                     SCStage *stage);
/*
 * Whether a page of [start, end) is being written.  With @notify, for a
 * caller that will wait for progress, its publisher is asked to wake the
 * waiters (@waiting); the others retry in a moment.
 */
bool sc_staged_busy(SCCache *c, uint64_t start, uint64_t end, bool notify);
/* The planner's pass: refused for a staged page (hold off) or not. */
void sc_staged_planned(SCCache *c, bool refused);

#endif /* SC_STAGED_H */
