# SPDX-License-Identifier: GPL-2.0-or-later
"""A QEMU process with a QMP monitor, as the tests run it: it dies with the
test even on SIGKILL (parent-death signal), can be killed -9 on purpose
(what a crash of the host process looks like to the nodes), or asked to
quit, which closes its disks and so writes the stripe cache back."""

import ctypes
import os
import shutil
import signal
import subprocess
import sys

from qmp import QMP

PR_SET_PDEATHSIG = 1


def _die_with_parent():
    ctypes.CDLL('libc.so.6', use_errno=True).prctl(PR_SET_PDEATHSIG,
                                                   signal.SIGKILL)


class QemuProcess:
    def __init__(self, cmdline, qmp_sock, log):
        """Start @cmdline, whose QMP monitor listens on @qmp_sock, with its
        output appended to @log."""
        self.cmdline = cmdline
        self.qmp_sock = qmp_sock
        self.log = log
        for attempt in (1, 2):
            stacks = self._start()
            if stacks is None:
                return
            # QEMU's main loop, not the driver, blocked in accept() on a
            # listening socket with nothing to accept: seen twice in CI
            # (QMP greeted, then no answer).  Say so, and start it again.
            if attempt == 1 and 'qio_net_listener_channel_func' in stacks:
                sys.stderr.write('%s hung in accept() at start, started '
                                 'again; its threads:%s\n' %
                                 (os.path.basename(cmdline[0]), stacks))
                continue
            break
        raise RuntimeError('%s did not start (%s); its log and threads are '
                           'on stderr' % (os.path.basename(cmdline[0]),
                                          self.start_error))

    def _start(self):
        """Start QEMU and connect to QMP; None when it answers, else the
        threads' stacks (it is killed, the reason in @start_error and on
        stderr)."""
        with open(self.log, 'a') as logf:
            self.proc = subprocess.Popen(self.cmdline,
                                         stdin=subprocess.DEVNULL,
                                         stdout=logf,
                                         stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
        try:
            self.qmp = QMP(self.qmp_sock, timeout=60, alive=self.alive)
            return None
        except Exception as e:
            # where it stood, before it is killed: a start that hangs
            # (a node that never answers its open) shows in the stacks
            stacks = self.stacks() if self.alive() else ''
            self.kill()
            self.start_error = str(e)
            sys.stderr.write('%s did not start (%s): %s%s\n' %
                             (os.path.basename(self.cmdline[0]), e,
                              self.log_text()[-2000:], stacks))
            return stacks

    def alive(self):
        return self.proc.poll() is None

    def stacks(self):
        """Every thread's stack, from gdb, or '' without it."""
        gdb = shutil.which('gdb')
        if not gdb:
            return ''
        try:
            r = subprocess.run([gdb, '-batch', '-nx', '-p', str(self.proc.pid),
                                '-ex', 'thread apply all bt'],
                               stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return '\n(gdb timed out)'
        frames = [line for line in r.stdout.splitlines()
                  if line.startswith(('#', 'Thread'))]
        return '\nthreads:\n' + '\n'.join(frames)

    def log_text(self):
        with open(self.log, errors='replace') as f:
            return f.read()

    def kill(self):
        """SIGKILL: nothing of QEMU's runs after it."""
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if hasattr(self, 'qmp'):
            self.qmp.close()

    def request_quit(self):
        """Ask QEMU to quit, without waiting: it closes its disks (writing
        the cache back) before it answers, if ever."""
        if self.alive():
            try:
                self.qmp.send('quit')
            except Exception:
                pass

    def quit(self, timeout=120):
        """Ask QEMU to quit and wait.  Its exit status, or None when it did
        not exit in time (it is then killed, and @quit_stacks says where
        it stood)."""
        self.request_quit()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.quit_stacks = self.stacks()
            self.kill()
            return None
        self.qmp.close()
        return rc
