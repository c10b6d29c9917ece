# SPDX-License-Identifier: GPL-2.0-or-later
"""A minimal synchronous QMP client with timeouts everywhere, so that a
test talking to a stuck QEMU fails instead of hanging.

Every command carries an id, which QEMU copies into its answer: an answer
is matched by it, never by its place in the stream, so a message that
answers no command of ours (a late answer to a command whose wait timed
out, a greeting) cannot shift every later answer onto the wrong command."""

import json
import select
import socket
import time


class QMPError(Exception):
    pass


class QMP:
    def __init__(self, path, timeout=30, alive=lambda: True):
        deadline = time.monotonic() + timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline or not alive():
                    raise QMPError('no QMP socket at %s' % path)
                time.sleep(0.05)
        self.timeout = timeout
        self.buf = b''
        self.events = []
        self.answers = {}           # id -> answer read while waiting for another
        self.last_id = 0
        if self._read(timeout) is None:
            raise QMPError('no QMP greeting in %d s' % timeout)
        self.cmd('qmp_capabilities')

    def _read(self, timeout):
        """One JSON message; None when @timeout seconds pass first."""
        deadline = time.monotonic() + timeout
        while b'\n' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not select.select([self.sock], [], [], left)[0]:
                continue
            try:
                data = self.sock.recv(65536)
            except OSError as e:
                raise QMPError('QMP read failed: %s' % e)
            if not data:
                raise QMPError('QMP connection closed')
            self.buf += data
        line, self.buf = self.buf.split(b'\n', 1)
        return json.loads(line)

    def send(self, command, **args):
        """Send a command without waiting for its answer (quit: QEMU may
        close its disks, which can take long, before it answers)."""
        self.last_id += 1
        msg = {'execute': command, 'id': self.last_id}
        if args:
            msg['arguments'] = args
        try:
            self.sock.sendall((json.dumps(msg) + '\n').encode())
        except OSError as e:
            raise QMPError('QMP write failed: %s' % e)

    def _keep(self, r):
        """Keep message @r, which is not the one being waited for; one
        that is neither an event nor an answer to a command of ours
        (it has no id) is dropped."""
        if 'event' in r:
            self.events.append(r)
        elif 'id' in r:
            self.answers[r['id']] = r

    def answer(self, timeout):
        """The answer to the command sent last, read within @timeout
        seconds (other messages meanwhile are kept); None if none came."""
        deadline = time.monotonic() + timeout
        while self.last_id not in self.answers:
            r = self._read(deadline - time.monotonic())
            if r is None:
                return None
            self._keep(r)
        return self.answers.pop(self.last_id)

    def result(self, command, r):
        """An answer's 'return' value, or QMPError."""
        if 'error' in r:
            raise QMPError('%s: %s' % (command, r['error'].get('desc')))
        return r.get('return')

    def cmd(self, command, timeout=None, **args):
        """Run a command; its 'return' value, or QMPError."""
        timeout = timeout or self.timeout
        self.send(command, **args)
        r = self.answer(timeout)
        if r is None:
            raise QMPError('%s: no answer in %d s' % (command, timeout))
        return self.result(command, r)

    def wait_event(self, name, timeout):
        """The first event called @name (seen before or arriving within
        @timeout seconds), removed from the list; None on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e['event'] == name:
                    return self.events.pop(i)
            r = self._read(deadline - time.monotonic())
            if r is None:
                return None
            self._keep(r)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
