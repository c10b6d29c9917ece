# SPDX-License-Identifier: GPL-2.0-or-later
"""A pool of harness storage nodes for the reliability tests, the faults the
harness can inject into one node, and a QEMU-free view of what the nodes
hold.

NodeView reads the LUN files behind the tgtd nodes directly and maps
virtual disk offsets to them by the on-node layout (docs/layout.md).  It is
how the tests know what really reached the nodes after a flush or after a
kill -9 of QEMU, without trusting any QEMU code: tgtd writes a command's
data to its LUN file before it answers, and the files are on tmpfs.
"""

import json
import os
import struct
import subprocess
import time
import zlib

import paths

HEADER_MAGIC = b'QSTRIPE\x1a'


class NodeError(Exception):
    pass


def run(cmd, timeout=120):
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=timeout)
    if res.returncode != 0:
        raise NodeError('%s failed (%d): %s' % (' '.join(cmd), res.returncode,
                                               res.stdout.strip()))
    return res.stdout


class Pool:
    """A harness pool owned by this process: a run that dies midway leaves
    nothing behind, the next `storage-nodes start` sweeps it."""

    # harness command that starts a fault, and the one that ends it
    FAULTS = {
        'offline': ('offline', 'online'),      # NOT READY to every command
        'readonly': ('readonly', 'readwrite'),  # writes fail, reads work
        'kill': ('kill', 'restart'),           # tgtd SIGKILLed, TCP gone
        'pause': ('pause', 'resume'),          # tgtd SIGSTOPped, TCP held
    }

    def __init__(self, workdir, count=4, size='64M', extra=()):
        self.dir = os.path.join(workdir, 'pool')
        self.info = json.loads(run(
            [paths.HARNESS, 'start', '--count', str(count), '--size', size,
             '--owner', str(os.getpid()), '--pool-dir', self.dir,
             '--format', 'json'] + list(extra)))
        self.nodes = self.info['nodes']
        self.files = [n['file'] for n in self.nodes]
        self.urls = ['iscsi://%s/%s/1' % (self.portal(n), n['iqn'])
                     for n in self.nodes]

    @staticmethod
    def portal(n):
        if n.get('proxy_port'):
            return '127.0.0.1:%d' % n['proxy_port']
        return '%s:%d' % (n['addr'], n['port'])

    def node_json(self, i, **extra):
        d = {'driver': 'iscsi', 'transport': 'tcp',
             'portal': self.portal(self.nodes[i]),
             'target': self.nodes[i]['iqn'], 'lun': 1}
        d.update(extra)
        return d

    def filename(self, order=None):
        urls = [self.urls[i] for i in (order or range(len(self.urls)))]
        return 'stripe:' + '|'.join(urls) + ('|' if len(urls) == 1 else '')

    def create(self, size, unit='64k', copies=1, region=None):
        opts = 'stripe-unit=%s,force=on,copies=%d' % (unit, copies)
        if region:
            opts += ',bitmap-region=%s' % region
        run([paths.QEMU_IMG, 'create', '-q', '-f', 'stripe', '-o', opts,
             self.filename(), str(size)])

    def harness(self, op, node):
        run([paths.HARNESS, op, '--pool-dir', self.dir, '--node', str(node)])

    def fault(self, kind, node, on):
        self.harness(self.FAULTS[kind][0 if on else 1], node)

    def stop(self):
        if os.path.exists(os.path.join(self.dir, 'pool.json')):
            subprocess.run([paths.HARNESS, 'stop', '--pool-dir', self.dir],
                           timeout=120)

    def checksums(self):
        """One digest per LUN file (for 'no node was written')."""
        sums = []
        for f in self.files:
            crc = 0
            with open(f, 'rb') as fh:
                while True:
                    chunk = fh.read(1 << 20)
                    if not chunk:
                        break
                    crc = zlib.crc32(chunk, crc)
            sums.append(crc)
        return sums


class NodeView:
    """The virtual disk as the LUN files hold it right now.  With several
    copies (docs/layout.md), read() reads a given copy of every unit, or
    the first copy not on a node that the newest headers list as failed.
    """

    def __init__(self, files):
        self.fds = {}
        count = unit = offset = None
        newest = -1
        self.failed = 0
        for f in files:
            with open(f, 'rb') as fh:
                hdr = fh.read(512)
            if hdr[:8] != HEADER_MAGIC:
                raise NodeError('%s has no stripe header' % f)
            if zlib.crc32(hdr[:508]) != struct.unpack_from('<I', hdr, 508)[0]:
                raise NodeError('%s: header checksum mismatch' % f)
            index, count, unit, self.size, offset = \
                struct.unpack_from('<IIQQQ', hdr, 32)
            incompat, generation, copies, _, failed = \
                struct.unpack_from('<QQIIQ', hdr, 72)
            self.copies = copies if incompat & 1 else 1
            self.region, self.bitmap_offset = (
                struct.unpack_from('<QQ', hdr, 104) if incompat & 2
                else (0, 0))
            if generation > newest:
                newest, self.failed = generation, failed
            self.fds[index] = f
        if sorted(self.fds) != list(range(count)):
            raise NodeError('node indexes %s, expected 0..%d' %
                            (sorted(self.fds), count - 1))
        self.count, self.unit, self.data_offset = count, unit, offset

    def place(self, k, copy):
        """Node and node offset of copy @copy of unit @k."""
        row, column = divmod(k, self.count)
        shift = 0
        if copy:
            shift = copy + row % (self.count - self.copies + 1)
        return ((column + shift) % self.count,
                self.data_offset + (row * self.copies + copy) * self.unit)

    def live_copies(self, k):
        return [c for c in range(self.copies)
                if not (self.failed >> self.place(k, c)[0]) & 1]

    def set_regions(self):
        """The regions set in the write-intent bitmap: the union of the
        live nodes' bitmaps, as open takes it (docs/layout.md)."""
        if not self.region:
            return set()
        count = -(-self.size // self.region)
        out = set()
        for index, f in self.fds.items():
            if (self.failed >> index) & 1:
                continue
            with open(f, 'rb') as fh:
                fh.seek(self.bitmap_offset)
                bits = fh.read(-(-count // 8))
            out |= {i for i in range(count) if bits[i // 8] >> (i % 8) & 1}
        return out

    def differing_regions(self, grain=4096):
        """The bitmap regions (with no bitmap: the units) in which two
        live copies differ, compared @grain bytes at a time."""
        per = self.region or self.unit
        out = set()
        for k in range(-(-self.size // self.unit)):
            n = min(self.unit, self.size - k * self.unit)
            datas = [self.read(k * self.unit, n, c)
                     for c in self.live_copies(k)]
            for at in range(0, n, grain):
                piece = datas[0][at:at + grain]
                if any(d[at:at + grain] != piece for d in datas[1:]):
                    out.add((k * self.unit + at) // per)
        return out

    def live_copy(self, k):
        copies = self.live_copies(k)
        if not copies:
            raise NodeError('unit %d has no live copy' % k)
        return copies[0]

    def read(self, offset, length, copy=None):
        out = bytearray()
        handles = {}
        try:
            while length > 0:
                k, within = divmod(offset, self.unit)
                n = min(length, self.unit - within)
                node, node_offset = self.place(
                    k, self.live_copy(k) if copy is None else copy)
                if node not in handles:
                    handles[node] = open(self.fds[node], 'rb')
                fh = handles[node]
                fh.seek(node_offset + within)
                data = fh.read(n)
                out += data + bytes(n - len(data))
                offset += n
                length -= n
        finally:
            for fh in handles.values():
                fh.close()
        return bytes(out)


def wait_for(cond, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()
