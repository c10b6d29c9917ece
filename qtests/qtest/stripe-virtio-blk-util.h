/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the stripe driver's virtio-blk qtests
 * (stripe-virtio-blk-test.c, stripe-virtio-blk-mq-test.c).
 *
 * Copyright (c) 2026 qemu-stripe developers
 */
#ifndef STRIPE_VIRTIO_BLK_UTIL_H
#define STRIPE_VIRTIO_BLK_UTIL_H

#include "libqos/virtio-blk.h"

#define SECTOR              512
#define REQ_HDR_SIZE        16
#define REQ_TIMEOUT_US      (60 * G_USEC_PER_SEC)

/* The layout of drive0 as the stripe driver reports it. */
typedef struct StripeGeometry {
    uint64_t size;              /* virtual size in bytes */
    uint64_t unit;              /* stripe unit in bytes */
    uint64_t data_offset;       /* where each node's data area starts */
    unsigned nodes;
    int debug_node;             /* index of the blkdebug node, or -1 */
} StripeGeometry;

/* One started device with one of its request queues. */
typedef struct StripeDev {
    QTestState *qts;
    QVirtioDevice *vdev;
    QGuestAllocator *alloc;
    QVirtQueue *vq;
    uint64_t features;
    uint64_t capacity;          /* in sectors, from the config space */
    StripeGeometry geo;
} StripeDev;

/* One request in flight: header, data and status byte in guest memory. */
typedef struct BlkReq {
    uint64_t addr;
    uint32_t head;
    uint32_t type;
    uint64_t sector;
    size_t len;
    bool done;
} BlkReq;

/* A copy of what a region of the disk holds, kept up to date by writes. */
typedef struct Shadow {
    uint64_t off;
    size_t len;
    uint8_t *buf;
} Shadow;
/* Bytes whose value depends on their disk offset and on @seed. */
void pattern_fill(uint8_t *buf, uint64_t off, size_t len, uint32_t seed);
void verify_bytes(const StripeDev *d, const uint8_t *got,
                  const uint8_t *want, uint64_t off, size_t len,
                  const char *what);

void shadow_init(Shadow *sh, uint64_t off, size_t len);
uint8_t *shadow_at(Shadow *sh, uint64_t off, size_t len);
void shadow_free(Shadow *sh);

/* Requests on d->vq. */
void blk_submit(StripeDev *d, BlkReq *r, uint32_t type, uint64_t sector,
                const uint8_t *data, size_t len, unsigned nseg);
void blk_wait_timeout(StripeDev *d, BlkReq *reqs, unsigned n,
                      gint64 timeout_us);
void blk_wait(StripeDev *d, BlkReq *reqs, unsigned n);
uint8_t blk_status(StripeDev *d, const BlkReq *r);
void blk_finish(StripeDev *d, BlkReq *r, uint8_t *data);
uint8_t blk_do(StripeDev *d, uint32_t type, uint64_t sector, uint8_t *data,
               size_t len, unsigned nseg);
void blk_write_pattern(StripeDev *d, Shadow *sh, uint64_t off, size_t len,
                       uint32_t seed, unsigned nseg);
void blk_read_verify(StripeDev *d, Shadow *sh, uint64_t off, size_t len,
                     unsigned nseg, const char *what);

/* What QMP tells about drive0. */
QDict *drive0_image(QDict *resp);
QDict *stripe_image_data(QDict *image);
void stripe_query_geometry(QTestState *qts, StripeGeometry *geo);

void stripe_dev_setup_queues(StripeDev *d, unsigned nq, QVirtioBlk *blk,
                             QGuestAllocator *alloc, uint64_t extra);
void stripe_dev_setup(StripeDev *d, QVirtioBlk *blk, QGuestAllocator *alloc,
                      uint64_t extra);
void stripe_dev_stop(StripeDev *d);

/* Command-line pieces. */
void append_opt_value(GString *s, const char *val);
char **split_words(const char *s);
unsigned append_url_nodes(GString *drive, char **urls);

#endif /* STRIPE_VIRTIO_BLK_UTIL_H */
