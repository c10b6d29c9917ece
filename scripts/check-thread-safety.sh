#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Prove the driver's coroutine_fn / GRAPH_RDLOCK annotations with clang's
# thread-safety analysis: compile every source of block/ (as built inside
# QEMU) with clang -Wthread-safety -Werror, using the exact flags of the
# gcc build from compile_commands.json.  QEMU's headers enable the lock
# annotations only under clang, so a gcc build checks nothing.  The same
# files are also compiled with gcc -Werror (QEMU from a tarball builds
# without -Werror, so warnings would otherwise pass unnoticed).
#
#   check-thread-safety.sh QEMU_BUILD_DIR     (e.g. build/qemu/qemu-build)
#
# Prints TAP, two tests per source file.

set -euo pipefail

OBJ=${1:?usage: $0 QEMU_BUILD_DIR}

exec python3 - "$OBJ" <<'EOF'
import json, os, shlex, subprocess, sys

obj = sys.argv[1]
entries = [e for e in json.load(open(os.path.join(obj,
                                                   'compile_commands.json')))
           if '/block/stripe/' in e['file'] or 'block_stripe_' in e.get(
               'output', '')]
# gcc-only flags, or flags clang 14 spells differently
drop_prefix = ('-Wimplicit-fallthrough=', '-Wshadow=', '-fzero-call-used-regs',
               '-ftrivial-auto-var-init', '-Wold-style-declaration',
               '-Wformat-y2k', '-Wmissing-format-attribute',
               '-fdiagnostics-color')
def strip_output(args):
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ('-o', '-MQ', '-MF'):
            skip = True
            continue
        if a == '-MD':
            continue
        out.append(a)
    return out


def check(n, what, cmd, cwd):
    res = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    if res.returncode == 0 and not res.stdout.strip():
        print('ok %d %s' % (n, what))
        return 0
    print('not ok %d %s' % (n, what))
    for line in res.stdout.splitlines():
        print('# ' + line)
    return 1


print('TAP version 13')
print('1..%d' % (2 * len(entries)))
failed = 0
n = 0
for e in sorted(entries, key=lambda e: e['file']):
    args = shlex.split(e['command'])
    name = os.path.basename(e['file'])
    n += 1
    failed += check(n, 'gcc -Werror ' + name,
                    strip_output(args) + ['-fsyntax-only', '-Werror'],
                    e['directory'])
    out = ['clang'] + [a for a in strip_output(args[1:])
                       if not a.startswith(drop_prefix) and a != '-m64']
    out += ['-m64', '-fsyntax-only', '-Wthread-safety', '-Werror',
            '-Wno-unknown-warning-option']
    n += 1
    failed += check(n, 'clang -Wthread-safety ' + name, out, e['directory'])
if not entries:
    print('Bail out! no block/stripe sources in compile_commands.json')
    sys.exit(1)
sys.exit(1 if failed else 0)
EOF
