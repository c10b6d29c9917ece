# SPDX-License-Identifier: GPL-2.0-or-later
"""The guest of the contract tests: an NBD client of the striped disk
(through QEMU's own NBD export, as a guest's requests go through a
BlockBackend), and the reference of every byte it wrote.

Data is self-describing (blocks.make_data: every sector names its write and
place), so a mismatch says whose data is where.  The reference is what a
reader must see: every acknowledged write, in order."""

import threading
import time

import nbd

from blocks import SECTOR, CORRUPT, ZERO, make_data, sector_version


class Reference:
    def __init__(self, size):
        self.size = size
        self.data = bytearray(size)
        # writes in flight: a reader may see their data or the old one
        self.maybe = {}             # id -> (offset, data)

    def copy(self):
        r = Reference(self.size)
        r.data[:] = self.data
        r.maybe = dict(self.maybe)
        return r

    def allowed(self, at, chunk):
        """Does sector-sized @chunk at byte @at match a write in flight?"""
        for off, data in self.maybe.values():
            if off <= at and at + len(chunk) <= off + len(data):
                if data[at - off:at - off + len(chunk)] == chunk:
                    return True
        return False

    def store(self, offset, data):
        self.data[offset:offset + len(data)] = data

    def zero(self, offset, length):
        self.data[offset:offset + length] = bytes(length)

    def diff(self, got, offset=0):
        """None if @got equals the reference at @offset, else a sentence
        naming the first bad sector, whose data it holds and what was
        expected."""
        want = self.data[offset:offset + len(got)]
        if got == want:
            return None
        for at in range(0, len(got), SECTOR):
            if got[at:at + SECTOR] != want[at:at + SECTOR] and \
               not self.allowed(offset + at, got[at:at + SECTOR]):
                sector = (offset + at) // SECTOR
                return ('sector %d (byte %d): holds %s, expected %s' %
                        (sector, offset + at, describe(got, at, sector),
                         describe(want, at, sector)))
        return None

    def zero_ranges_ok(self, extents):
        """@extents: (offset, length) ranges called holes or zeroes; None
        if the reference is zero there, else what is wrong."""
        for off, length in extents:
            if any(self.data[off:off + length]):
                first = next(i for i in range(off, off + length)
                             if self.data[i])
                return ('block status calls [%d, +%d) zero, but byte %d '
                        'holds data (sector %s)' %
                        (off, length, first,
                         describe(self.data, first // SECTOR * SECTOR,
                                  first // SECTOR)))
        return None


def describe(buf, at, sector):
    v = sector_version(buf, at, sector)
    if v == ZERO:
        return 'zeroes'
    if v == CORRUPT:
        return 'foreign bytes'
    return 'write #%d' % v


class Guest:
    """NBD client on an export of the striped disk."""

    def __init__(self, uri, ref, first_id=1):
        self.ref = ref
        self.uri = uri
        self.next_id = first_id
        self.h = nbd.NBD()
        self.h.add_meta_context('base:allocation')
        self.h.connect_uri(uri)
        self.inflight = []          # requests in their own threads

    def close(self):
        """Drop the connection at once (a graceful NBD disconnect would
        wait for a QEMU that may hang: that is what some tests look for)."""
        del self.h

    def new_data(self, offset, length):
        wid = self.next_id
        self.next_id += 1
        return make_data(offset, length, wid)

    # -- synchronous ------------------------------------------------------

    def write(self, offset, length, chunk=64 << 10):
        """Write [offset, +length) in chunks; acknowledged when it returns."""
        for at in range(offset, offset + length, chunk):
            n = min(chunk, offset + length - at)
            data = self.new_data(at, n)
            self.h.pwrite(data, at)
            self.ref.store(at, data)

    def zero(self, offset, length):
        self.h.zero(length, offset)
        self.ref.zero(offset, length)

    def trim(self, offset, length):
        """Discard; QEMU's export reads zeroes after a discard of a stripe
        over nodes that do (files, tgtd LUNs)."""
        self.h.trim(length, offset)

    def flush(self):
        self.h.flush()

    def read(self, offset, length):
        return self.h.pread(length, offset)

    def check(self, offset=0, length=None, chunk=4 << 20):
        """None if the disk reads as the reference, else what differs."""
        length = self.ref.size - offset if length is None else length
        for at in range(offset, offset + length, chunk):
            n = min(chunk, offset + length - at)
            bad = self.ref.diff(self.read(at, n), at)
            if bad:
                return bad
        return None

    def zero_extents(self, offset=0, length=None):
        """Ranges that base:allocation reports as holes or zeroes."""
        length = self.ref.size - offset if length is None else length
        out = []
        pos = offset
        while pos < offset + length:
            got = []

            def cb(ctx, off, entries, err):
                got.append((off, entries))
                return 0
            self.h.block_status(offset + length - pos, pos, cb)
            for off, entries in got:
                at = off
                for i in range(0, len(entries), 2):
                    n, flags = entries[i], entries[i + 1]
                    if flags & (nbd.STATE_HOLE | nbd.STATE_ZERO):
                        out.append((at, n))
                    at += n
                pos = max(pos, at)
        return out

    # -- asynchronous -----------------------------------------------------
    #
    # A request "in flight" runs in a thread of its own, on a connection of
    # its own, which keeps reading the reply: QEMU's NBD server cannot
    # finish a request whose reply nobody reads, and a drain waits for it
    # (a guest's virtio queue is always read too).

    def _background(self, kind, offset, payload, fn):
        req = {'kind': kind, 'offset': offset, 'payload': payload,
               'error': None, 'done': False}
        if kind == 'write':
            self.ref.maybe[id(req)] = (offset, payload)
        elif kind == 'zero':
            self.ref.maybe[id(req)] = (offset, bytes(payload))

        def run():
            h = nbd.NBD()
            try:
                h.connect_uri(self.uri)
                req['result'] = fn(h)
            except nbd.Error as e:
                req['error'] = str(e)
            finally:
                req['done'] = True
                del h
        req['thread'] = threading.Thread(target=run, daemon=True)
        req['thread'].start()
        self.inflight.append(req)
        return req

    def aio_write(self, offset, length):
        data = self.new_data(offset, length)
        return self._background('write', offset, data,
                                lambda h: h.pwrite(data, offset))

    def aio_zero(self, offset, length):
        return self._background('zero', offset, length,
                                lambda h: h.zero(length, offset))

    def aio_read(self, offset, length):
        return self._background('read', offset, None,
                                lambda h: h.pread(length, offset))

    def wait_sent(self, timeout=10):
        """Give the threads a moment to send their requests."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(r['thread'].is_alive() or r['done']
                   for r in self.inflight):
                break
            time.sleep(0.01)
        time.sleep(0.05)

    def settle(self, timeout=120, cut_off=False):
        """Wait for every request in flight: writes enter the reference
        when acknowledged, reads are checked against it.  Returns a list
        of problems (empty when fine).  @cut_off: the connections were
        dropped on purpose: a request that failed is no problem, and a
        write of it may or may not have landed."""
        problems = []
        deadline = time.monotonic() + timeout
        for req in self.inflight:
            req['thread'].join(max(0, deadline - time.monotonic()))
            if req['error'] and cut_off:
                continue
            self.ref.maybe.pop(id(req), None)
            if req['thread'].is_alive():
                problems.append('%s at %d not answered in %d s' %
                                (req['kind'], req['offset'], timeout))
            elif req['error']:
                problems.append('%s at %d failed: %s' %
                                (req['kind'], req['offset'], req['error']))
            elif req['kind'] == 'write':
                self.ref.store(req['offset'], req['payload'])
            elif req['kind'] == 'zero':
                self.ref.zero(req['offset'], req['payload'])
            else:
                bad = self.ref.diff(req['result'], req['offset'])
                if bad:
                    problems.append('read at %d: %s' % (req['offset'], bad))
        self.inflight = []
        return problems
