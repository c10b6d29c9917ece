# SPDX-License-Identifier: GPL-2.0-or-later
"""TAP output for the reliability tests: one line per check, a plan at the
end, diagnostics as comments, and an exit status that says whether every
check passed (meson runs these with protocol 'tap')."""

import sys


class Tap:
    def __init__(self):
        self.count = 0
        self.failed = 0

    def ok(self, cond, what, why=''):
        self.count += 1
        if cond:
            print('ok %d - %s' % (self.count, what), flush=True)
        else:
            self.failed += 1
            print('not ok %d - %s%s' % (self.count, what,
                                          (': ' + why) if why else ''),
                  flush=True)
        return cond

    @staticmethod
    def diag(msg):
        for line in str(msg).splitlines() or ['']:
            print('# ' + line, flush=True)

    @staticmethod
    def bail(msg):
        print('Bail out! ' + msg, flush=True)
        sys.exit(1)

    def finish(self):
        print('1..%d' % self.count, flush=True)
        if self.failed:
            self.diag('%d of %d checks failed' % (self.failed, self.count))
        return 1 if self.failed or not self.count else 0
