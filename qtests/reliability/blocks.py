# SPDX-License-Identifier: GPL-2.0-or-later
"""Self-describing data and the model of what the disk must hold.

Every 512-byte sector a test writes carries its own identity: a magic, its
sector number, the id of the write that produced it and a CRC-32 of the
whole sector.  Reading any sector back therefore tells which write it came
from, or that it is torn, misplaced or garbage, without keeping the data.

The model records, per 4 KiB block, the writes in the order they were
issued (the workloads never have two requests in flight on one block, so
that order is total), which of them were acknowledged, and which flushes
completed.  From that it derives what a block may hold:

  - after a completed flush, at least the newest write acknowledged before
    the flush was sent; a later write (acknowledged, failed or cut off by a
    crash) may have replaced it, an older one may not;
  - after a clean close (the daemon quit successfully), likewise for every
    write acknowledged before the close;
  - a read returns at least the newest write acknowledged before the read
    was sent (or a later failed one, which may have landed).
"""

import os
import struct
import time
import zlib

SECTOR = 512
BLOCK = 4096
SECTORS_PER_BLOCK = BLOCK // SECTOR
MAGIC = b'QSRELIA\x01'
ZERO = 0            # version id of a never-written (all-zero) sector
CORRUPT = -1        # not a sector of ours, bad checksum or wrong place
CORRUPT_WHY = 'garbage, torn or misplaced data'  # check() on CORRUPT
LIVE_REREADS = 3    # check_live() reads a torn sector again this often
LIVE_PAUSE = 0.05   # seconds between those reads
_HDR = struct.Struct('<8sQQ')       # magic, sector number, write id
_CRC_AT = _HDR.size                 # 24: CRC-32 of the rest of the sector
_PAYLOAD_AT = _CRC_AT + 4


def make_data(offset, length, write_id):
    """The bytes of write @write_id at byte @offset (sector aligned)."""
    buf = bytearray(os.urandom(length))
    for at in range(0, length, SECTOR):
        _HDR.pack_into(buf, at, MAGIC, (offset + at) // SECTOR, write_id)
        crc = zlib.crc32(buf[at:at + _CRC_AT])
        crc = zlib.crc32(buf[at + _PAYLOAD_AT:at + SECTOR], crc)
        struct.pack_into('<I', buf, at + _CRC_AT, crc)
    return bytes(buf)


_ZERO_SECTOR = bytes(SECTOR)


def sector_version(data, at, sector):
    """Write id held by the sector at data[at:at+512], expected to be disk
    sector @sector: ZERO, an id, or CORRUPT."""
    chunk = data[at:at + SECTOR]
    if chunk == _ZERO_SECTOR:
        return ZERO
    magic, num, wid = _HDR.unpack_from(chunk, 0)
    if magic != MAGIC or num != sector:
        return CORRUPT
    crc = zlib.crc32(chunk[:_CRC_AT])
    crc = zlib.crc32(chunk[_PAYLOAD_AT:], crc)
    if crc != struct.unpack_from('<I', chunk, _CRC_AT)[0]:
        return CORRUPT
    return wid


class Write:
    __slots__ = ('wid', 'first', 'count', 'acked', 'failed', 'ack_seq')

    def __init__(self, wid, first, count):
        self.wid, self.first, self.count = wid, first, count
        self.acked = self.failed = False
        self.ack_seq = None


class Model:
    """What each block of a region of @blocks 4 KiB blocks may hold."""

    def __init__(self, blocks, first_wid=1):
        self.blocks = blocks
        # Per block: write ids in issue order; hist[b][0] is a version that
        # is known to have been there (ZERO at first).
        self.hist = [[ZERO] for _ in range(blocks)]
        # Per block: index in hist of the oldest version still allowed on
        # the nodes (durable floor) and after a read (acknowledged floor).
        self.durable = [0] * blocks
        self.acked = [0] * blocks
        self.writes = {}
        self.next_wid = first_wid
        self.seq = 0                    # orders acks and flush starts
        self.ack_log = []               # acknowledged writes, in ack order
        self.ack_log_done = 0           # prefix already made durable
        self.durable_seq = 0

    # ---- recording what the workload does ----------------------------

    def new_write(self, first_block, count):
        w = Write(self.next_wid, first_block, count)
        self.next_wid += 1
        self.writes[w.wid] = w
        for b in range(first_block, first_block + count):
            self.hist[b].append(w.wid)
        return w

    def write_done(self, w, ok):
        self.seq += 1
        if not ok:
            w.failed = True
            return
        w.acked, w.ack_seq = True, self.seq
        self.ack_log.append(w)
        for b in range(w.first, w.first + w.count):
            self.acked[b] = self._index(b, w.wid)

    def flush_start(self):
        """A token for a flush sent now."""
        self.seq += 1
        return self.seq

    def flush_done(self, token):
        """A flush sent at @token completed successfully."""
        if token <= self.durable_seq:
            return
        self.durable_seq = token
        log = self.ack_log
        i = self.ack_log_done
        while i < len(log) and log[i].ack_seq < token:
            w = log[i]
            for b in range(w.first, w.first + w.count):
                idx = self._index(b, w.wid)
                if idx > self.durable[b]:
                    self.durable[b] = idx
            i += 1
        self.ack_log_done = i

    def all_acked_durable(self):
        """A clean close: everything acknowledged is on the nodes."""
        self.flush_done(self.flush_start())

    def _index(self, b, wid):
        h = self.hist[b]
        for i in range(len(h) - 1, -1, -1):
            if h[i] == wid:
                return i
        raise KeyError('write %d not in block %d' % (wid, b))

    # ---- checking what was read -------------------------------------

    def check(self, data, first_block, floor='durable', limit=20):
        """Problems (strings) in @data, read from @first_block on, against
        the durable floor (nodes after flush/crash/close) or the
        acknowledged floor (a read by the running daemon)."""
        problems = []
        floors = self.durable if floor == 'durable' else self.acked
        nblocks = len(data) // BLOCK
        for i in range(nblocks):
            b = first_block + i
            h = self.hist[b]
            allowed = set(h[floors[b]:])
            for s in range(SECTORS_PER_BLOCK):
                at = i * BLOCK + s * SECTOR
                sector = b * SECTORS_PER_BLOCK + s
                v = sector_version(data, at, sector)
                if v in allowed:
                    continue
                if v == CORRUPT:
                    why = CORRUPT_WHY
                elif v in h:
                    why = 'write %d, older than write %d (%s)' % (
                        v, h[floors[b]], self._describe(h[floors[b]]))
                else:
                    why = 'write %d, never written here' % v
                problems.append('sector %d (block %d): %s' % (sector, b, why))
                if len(problems) >= limit:
                    return problems
                break       # one problem per block is enough
        return problems

    def check_live(self, read, first_block=0, note=None):
        """check() of what @read() returns while writes go on: the LUN files
        read while tgtd writes them.  On tmpfs a read of a sector being
        written can see it half written, so a torn sector is read again a
        moment later, and counts only if it is still torn: a write in
        flight ends within milliseconds, a torn sector on a node stays.
        @note(message) is told of every read again."""
        for attempt in range(LIVE_REREADS + 1):
            found = self.check(read(), first_block)
            if attempt == LIVE_REREADS or \
                    not any(CORRUPT_WHY in p for p in found):
                return found
            if note:
                note('%s; reading again' % found[0])
            time.sleep(LIVE_PAUSE)

    def _describe(self, wid):
        w = self.writes.get(wid)
        if w is None:
            return 'the known content'
        return 'acknowledged' if w.acked else \
            ('failed' if w.failed else 'not acknowledged')

    # ---- starting over from what was read ----------------------------

    def rebase(self, data, first_block=0):
        """Forget the history: the blocks now hold what @data says (the
        next crash trial starts from what the last one left).  A block
        that a crash left mixing two writes keeps both as allowed."""
        for i in range(len(data) // BLOCK):
            b = first_block + i
            versions = {sector_version(data, i * BLOCK + s * SECTOR,
                                       b * SECTORS_PER_BLOCK + s)
                        for s in range(SECTORS_PER_BLOCK)}
            self.hist[b] = sorted(versions)
            self.durable[b] = self.acked[b] = 0
        self.writes.clear()
        self.ack_log.clear()
        self.ack_log_done = 0

    def prune(self):
        """Drop versions below the durable floor (memory for long runs)."""
        for b in range(self.blocks):
            d = min(self.durable[b], self.acked[b])
            if d > 0:
                self.hist[b] = self.hist[b][d:]
                self.durable[b] -= d
                self.acked[b] -= d
        live = set()
        for h in self.hist:
            live.update(h)
        for wid in [w for w in self.writes if w not in live]:
            del self.writes[wid]
        self.ack_log = self.ack_log[self.ack_log_done:]
        self.ack_log_done = 0
