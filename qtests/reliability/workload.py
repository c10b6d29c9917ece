# SPDX-License-Identifier: GPL-2.0-or-later
"""A random read/write/flush workload over NBD (libnbd, asynchronous),
recording into a blocks.Model what was acknowledged and which flushes
completed, and checking every read against the model as it completes.

Requests on one 4 KiB block never overlap in time, so the model knows the
order of the writes to every block.  Reads are sent with NBD's "don't
fragment" flag (a structured read, as libnbd wants for that flag): QEMU's NBD server then answers a failed read with an
error reply instead of dropping the connection (as it does when a
structured, sparse read fails midway).
"""

import errno
import time

import nbd

from blocks import BLOCK, make_data


def _ignore_chunk(subbuf, offset, status, err):
    # With "don't fragment" the reply is one data chunk or an error.
    return 0


class Workload:
    def __init__(self, h, model, rng, first_block=0, blocks=None, qd=16,
                 read_share=0.3, flush_share=0.02, max_blocks=64,
                 check_reads=True, lie=None):
        self.h, self.model, self.rng = h, model, rng
        self.first = first_block
        self.nblocks = blocks if blocks is not None else model.blocks
        self.qd, self.read_share, self.flush_share = qd, read_share, \
            flush_share
        self.max_blocks, self.check_reads = max_blocks, check_reads
        # 'skip-flush': claim flushes completed without sending them, to
        # show that the checks catch a cache that lies about flushes.
        self.lie = lie
        self.busy = set()
        self.inflight = 0
        self.problems = []
        self.errors = {}            # (kind, errno name) -> count
        self.flushes_ok = self.flushes_failed = 0
        self.bytes_written = self.bytes_read = 0
        self.ops = 0
        self.dead = False
        self.stop_issuing = False

    # ---- completions ------------------------------------------------

    def _error(self, kind, err):
        name = errno.errorcode.get(err, str(err))
        self.errors[(kind, name)] = self.errors.get((kind, name), 0) + 1

    def _write_cb(self, w, blocks, data):
        def cb(err):
            e = err.value
            self.model.write_done(w, e == 0)
            if e:
                self._error('write', e)
            else:
                self.bytes_written += len(data)
                self.ops += 1
            self.busy.difference_update(blocks)
            self.inflight -= 1
            return 1
        return cb

    def _read_cb(self, first, blocks, buf):
        def cb(err):
            e = err.value
            if e:
                self._error('read', e)
            else:
                self.bytes_read += len(blocks) * BLOCK
                self.ops += 1
                if self.check_reads:
                    self.problems += [
                        'read: ' + p for p in
                        self.model.check(bytes(buf.to_bytearray()), first,
                                         floor='acked')]
            self.busy.difference_update(blocks)
            self.inflight -= 1
            return 1
        return cb

    def _flush_cb(self, token):
        def cb(err):
            e = err.value
            if e:
                self._error('flush', e)
                self.flushes_failed += 1
            else:
                self.model.flush_done(token)
                self.flushes_ok += 1
            self.inflight -= 1
            return 1
        return cb

    # ---- issuing ----------------------------------------------------

    def _pick(self):
        """A free run of blocks, or None."""
        for _ in range(8):
            if self.rng.random() < 0.7:
                count = 1
            else:
                count = self.rng.randint(2, self.max_blocks)
            count = min(count, self.nblocks)
            first = self.first + self.rng.randrange(self.nblocks - count + 1)
            blocks = range(first, first + count)
            if not any(b in self.busy for b in blocks):
                return first, blocks
        return None

    def flush(self):
        token = self.model.flush_start()
        if self.lie == 'skip-flush':
            self.model.flush_done(token)
            self.flushes_ok += 1
            return
        self.h.aio_flush(completion=self._flush_cb(token))
        self.inflight += 1

    def issue_one(self):
        r = self.rng.random()
        if r < self.flush_share:
            self.flush()
            return
        picked = self._pick()
        if picked is None:
            return
        first, blocks = picked
        self.busy.update(blocks)
        self.inflight += 1
        if r < self.flush_share + self.read_share:
            buf = nbd.Buffer(len(blocks) * BLOCK)
            self.h.aio_pread_structured(
                buf, first * BLOCK, _ignore_chunk,
                completion=self._read_cb(first, blocks, buf),
                flags=nbd.CMD_FLAG_DF)
        else:
            w = self.model.new_write(first, len(blocks))
            data = make_data(first * BLOCK, len(blocks) * BLOCK, w.wid)
            self.h.aio_pwrite(data, first * BLOCK,
                              completion=self._write_cb(w, blocks, data))

    def step(self, poll_ms=50):
        """Top up the queue, then wait once for progress."""
        try:
            while not self.stop_issuing and self.inflight < self.qd:
                self.issue_one()
            if self.inflight:
                self.h.poll(poll_ms)
            else:
                time.sleep(poll_ms / 1000.0)
        except nbd.Error as e:
            self.dead = True
            self.death = str(e)

    def run(self, seconds, until=lambda: False):
        deadline = time.monotonic() + seconds
        while not self.dead and time.monotonic() < deadline and not until():
            self.step()

    def drain(self, timeout):
        """Stop issuing and wait for what is in flight; False on timeout."""
        self.stop_issuing = True
        deadline = time.monotonic() + timeout
        while not self.dead and self.inflight and \
                time.monotonic() < deadline:
            self.step()
        self.stop_issuing = False
        return self.inflight == 0

    def summary(self):
        errs = ', '.join('%s %s x%d' % (k[0], k[1], v)
                         for k, v in sorted(self.errors.items()))
        return ('%d ops, %.1f MiB written, %.1f MiB read, %d flushes ok, '
                '%d failed%s' % (self.ops, self.bytes_written / 2**20,
                                 self.bytes_read / 2**20, self.flushes_ok,
                                 self.flushes_failed,
                                 ('; errors: ' + errs) if errs else ''))


def read_region(h, first_block, blocks, chunk_blocks=256):
    """The region read synchronously through NBD."""
    out = bytearray()
    b = first_block
    end = first_block + blocks
    while b < end:
        n = min(chunk_blocks, end - b)
        out += h.pread_structured(n * BLOCK, b * BLOCK, _ignore_chunk,
                                  nbd.CMD_FLAG_DF)
        b += n
    return bytes(out)
