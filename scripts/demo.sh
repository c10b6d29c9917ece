#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The demo: a real Linux guest on a striped disk.  From nothing on a Debian
# 12 machine (as root) it installs and builds what it needs, builds a small
# guest from Debian packages, starts a local pool of iSCSI storage nodes
# (tgtd), creates a striped disk over them with qemu-img and boots the guest
# in qemu-system-x86_64 (TCG) with the disk attached by one -drive line.
# The guest makes an ext4 filesystem, writes files, checks them after a
# remount and measures throughput; the nodes are then killed and restarted
# and a second boot finds every file intact.  With --copies 2 every stripe
# unit is on two nodes, and one node is killed while the guest writes: the
# guest must not notice, and the second boot brings the node back.  Leaves
# nothing running; exits non-zero if any check fails.  See
# docs/first-steps.md.
#
#   scripts/demo.sh [--nodes N] [--copies C] [--cache-mode MODE]
#                   [--disk-size SIZE] [--stripe-unit SIZE] [--cache-size V]
#                   [--opt NAME=VALUE] ...   (--help for all)
#
# QEMU_STRIPE_BUILD selects the build directory (default: ./build); the
# guest logs of the last run stay in BUILD/demo.

set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${QEMU_STRIPE_BUILD:-$REPO/build}
QEMU="$BUILD/qemu/qemu-build"
GUEST="$BUILD/vm"
LOGS="$BUILD/demo"
VM="$REPO/qtests/vm"
HARNESS="$REPO/qtests/harness/storage-nodes"

NODES=4
COPIES=1
SICK=1              # the node killed while the guest writes (--copies > 1)
NODE_TIMEOUT=5
NODE_RATE=""
CACHE_MODE=writeback
DISK_SIZE=1G
STRIPE_UNIT=64k
FILES_MIB=8
SEQ_MIB=64
RAND_OPS=1000
BOOT_TIMEOUT=900
EXTRA_OPTS=()
# The stripe driver's cache and readahead options (docs/cache-options.md):
# each has a --NAME VALUE flag that adds NAME=VALUE to the -drive line.
STRIPE_OPTS=(cache-size cache-max-dirty cache-target-dirty
             cache-max-dirty-age cache-writethrough-until-flush
             cache-eager-writeback readahead-trigger-requests
             readahead-max-bytes readahead-disable-after-bytes)

usage() {
    cat <<EOF
usage: scripts/demo.sh [options]

  --nodes N             storage nodes to stripe over (default $NODES)
  --copies C            copies of every stripe unit, 1 to 3 (default $COPIES);
                        with 2 or 3, node $SICK is killed -9 while the guest
                        writes its files, and the guest must not notice
  --node-rate RATE      cap each node's bandwidth, e.g. 100mbit (each node in
                        its own network namespace; loopback nodes are
                        CPU-bound, capped ones show what striping gains)
  --cache-mode MODE     QEMU's -drive cache= mode: none, writeback,
                        writethrough, directsync or unsafe (default $CACHE_MODE)
  --disk-size SIZE      size of the striped disk (default $DISK_SIZE)
  --stripe-unit SIZE    bytes per stripe unit (default $STRIPE_UNIT)
  --files-mib N         size of the large file the guest checks (default $FILES_MIB)
  --seq-mib N           sequential throughput test size (default $SEQ_MIB, 0 = skip)
  --rand-ops N          random 4 KiB reads and writes (default $RAND_OPS, 0 = skip)
$(for o in "${STRIPE_OPTS[@]}"; do echo "  --$o V"; done)
                        the stripe driver's cache and readahead options
                        (docs/cache-options.md): add NAME=V to the -drive line
  --opt NAME=VALUE      add any option to the -drive line (repeatable)
EOF
}

die() {
    echo "demo: $*" >&2
    exit 1
}

is_stripe_opt() {
    local o
    for o in "${STRIPE_OPTS[@]}"; do
        [ "$o" = "$1" ] && return 0
    done
    return 1
}

while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    --nodes) NODES=$2; shift 2 ;;
    --copies) COPIES=$2; shift 2 ;;
    --node-rate) NODE_RATE=$2; shift 2 ;;
    --cache-mode) CACHE_MODE=$2; shift 2 ;;
    --disk-size) DISK_SIZE=$2; shift 2 ;;
    --stripe-unit) STRIPE_UNIT=$2; shift 2 ;;
    --files-mib) FILES_MIB=$2; shift 2 ;;
    --seq-mib) SEQ_MIB=$2; shift 2 ;;
    --rand-ops) RAND_OPS=$2; shift 2 ;;
    --opt)
        [[ "${2:-}" == ?*=* ]] || die "--opt needs NAME=VALUE"
        EXTRA_OPTS+=("$2"); shift 2 ;;
    --*)
        is_stripe_opt "${1#--}" && [ $# -ge 2 ] ||
            die "unknown option $1 (see --help)"
        EXTRA_OPTS+=("${1#--}=$2"); shift 2 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done
case "$CACHE_MODE" in
none | writeback | writethrough | directsync | unsafe) ;;
*) die "--cache-mode must be none, writeback, writethrough, directsync" \
       "or unsafe, not '$CACHE_MODE'" ;;
esac
[[ "$NODES" =~ ^[0-9]+$ ]] && [ "$NODES" -ge 1 ] && [ "$NODES" -le 32 ] ||
    die "--nodes must be 1 to 32"
[[ "$COPIES" =~ ^[1-3]$ ]] && [ "$COPIES" -le "$NODES" ] ||
    die "--copies must be 1 to 3, and at most --nodes ($NODES)"
for v in FILES_MIB SEQ_MIB RAND_OPS; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || die "--${v,,} must be a number"
done
disk_bytes=$(numfmt --from=iec "${DISK_SIZE^^}") || die "bad --disk-size"
unit_bytes=$(numfmt --from=iec "${STRIPE_UNIT^^}") || die "bad --stripe-unit"
[ "$unit_bytes" -gt 0 ] || die "bad --stripe-unit"

START=$SECONDS
step_start=$SECONDS
step() {
    echo
    echo "== $*"
    step_start=$SECONDS
}
took() {
    echo "   ($((SECONDS - step_start)) s)"
}

POOL_DIR=$(mktemp -d /tmp/qemu-stripe-demo.XXXXXX)
guest_pid="" killer=""
cleanup() {
    if [ -n "$killer" ]; then
        kill "$killer" 2>/dev/null || true
    fi
    # run-guest cleans up after QEMU when asked nicely.
    if [ -n "$guest_pid" ]; then
        kill -TERM "$guest_pid" 2>/dev/null || true
        wait "$guest_pid" 2>/dev/null || true
    fi
    if [ -f "$POOL_DIR/pool.json" ]; then
        echo "== stopping the nodes"
        "$HARNESS" stop --pool-dir "$POOL_DIR" || true
    fi
    rm -rf "$POOL_DIR"
    echo "== wall time $((SECONDS - START)) s"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

step "installing packages and building QEMU (scripts/install-deps.sh," \
     "scripts/build-qemu.sh)"
"$REPO/scripts/install-deps.sh"
"$REPO/scripts/build-qemu.sh" --build-dir "$BUILD/qemu"
took

step "building the guest from Debian packages (qtests/vm/build-guest)"
"$VM/build-guest" --out "$GUEST"
echo "   kernel from $(cat "$GUEST/kernel-version")," \
     "initramfs $(du -h "$GUEST/initramfs.gz" | cut -f1)" \
     "(contents: $GUEST/manifest.txt)"
took

# Each node holds ceil(size * copies / unit / N) units after a data offset
# of max(1 MiB, unit); round up to MiB and leave one unit to spare.
units=$(( (disk_bytes + unit_bytes - 1) / unit_bytes * COPIES ))
per_node=$(( ((units + NODES - 1) / NODES + 1) * unit_bytes ))
offset=$(( unit_bytes > 1048576 ? unit_bytes : 1048576 ))
node_mib=$(( (per_node + offset + 1048575) / 1048576 ))

rate_args=() rate_note=""
if [ -n "$NODE_RATE" ]; then
    rate_args=(--netns --rate "$NODE_RATE")
    rate_note=", each capped to $NODE_RATE"
fi
nodes_word=nodes
[ "$NODES" = 1 ] && nodes_word=node
step "starting $NODES iSCSI storage $nodes_word (tgtd, LUNs of $node_mib MiB" \
     "on /dev/shm$rate_note)"
nodes_env=$("$HARNESS" start --count "$NODES" --size "${node_mib}M" \
            "${rate_args[@]}" --owner $$ --pool-dir "$POOL_DIR" \
            --format env) ||
    die "could not start the storage nodes"
eval "$nodes_env"
urls=()
for ((i = 0; i < NODES; i++)); do
    var=NODE${i}_URL
    urls+=("${!var}")
    echo "   node $i: ${!var}"
done
took

copies_note="" create_opts="stripe-unit=$STRIPE_UNIT"
if [ "$COPIES" -gt 1 ]; then
    copies_note=", $COPIES copies of every unit"
    create_opts+=",copies=$COPIES"
fi
step "creating a $DISK_SIZE striped disk over the $nodes_word" \
     "($STRIPE_UNIT stripe unit$copies_note)"
IMG="stripe:$(IFS='|'; echo "${urls[*]}")"
# A single node needs a trailing '|': "stripe:X" alone means files X.0, ...
[ "$NODES" = 1 ] && IMG+="|"
echo "   qemu-img create -f stripe -o $create_opts" \
     "'stripe:URL0|URL1|...' $DISK_SIZE"
"$QEMU/qemu-img" create -q -f stripe -o "$create_opts" "$IMG" "$DISK_SIZE"
"$QEMU/qemu-img" info -f stripe "$IMG" |
    grep -e 'virtual size' -e uuid -e 'stripe unit' -e copies |
    sed 's/^ */   /'
took

DRIVE="if=virtio,id=stripe0,driver=stripe,cache=$CACHE_MODE"
for ((i = 0; i < NODES; i++)); do
    DRIVE+=",nodes.$i.filename=${urls[$i]}"
done
[ "$COPIES" -gt 1 ] && DRIVE+=",node-timeout=$NODE_TIMEOUT"
for o in "${EXTRA_OPTS[@]}"; do
    DRIVE+=",$o"
done
# What the cache mode means for this disk (QEMU's -drive cache= modes).
case "$CACHE_MODE" in
writeback) mode_note="the guest is told the disk has a volatile write
cache, so it sends flushes, which the stripe driver passes on to every node
(QEMU's default)" ;;
none) mode_note="as writeback for the guest; the host page cache is
bypassed where there is one (iSCSI nodes have none)" ;;
writethrough) mode_note="the guest sees no write cache: every write goes
to the nodes it touches with FUA, so it is on their media when it
completes" ;;
directsync) mode_note="writethrough, and the host page cache is bypassed
where there is one" ;;
unsafe) mode_note="flushes are ignored: fast, and data is lost if the host
or a node dies" ;;
esac
explain="if=virtio gives the guest a virtio-blk disk (/dev/vda).
id=stripe0 names it, for query-blockstats over QMP.  driver=stripe is our
driver; it assembles the disk from the nodes.N.filename entries, here
$NODES iSCSI LUNs opened by QEMU's libiscsi driver, in any order: each
node's header says where it belongs.  cache=$CACHE_MODE: $mode_note."
if [ "$COPIES" -gt 1 ]; then
    explain+="  node-timeout=$NODE_TIMEOUT: a node that does not answer
within $NODE_TIMEOUT s is marked failed and the other copies serve its
data."
fi
if [ ${#EXTRA_OPTS[@]} != 0 ]; then
    explain+="  ${EXTRA_OPTS[*]}: passed to the stripe driver as they are;
a driver without such an option refuses to open the disk and QEMU names the
option."
fi
explain+="  The rest of the QEMU command line (kernel, initramfs, serial ports,
QMP socket) is saved in $LOGS/boot1.cmdline."
echo
echo "== the disk goes into the VM with this one option:"
echo
echo "-drive $DRIVE"
echo
echo "$explain" | fmt -w 74 | sed 's/^/   /'

mkdir -p "$LOGS"
rm -f "$LOGS"/boot*

# $1: boot number, $2: kernel arguments, $3: reference results or "".
boot() {
    local b=$1 rc=0 ref=()
    echo "   (TCG: no KVM here, so this takes a while; guest console:" \
         "$LOGS/boot$b.console)"
    # run-guest (and with it QEMU) dies with this script, even on SIGKILL;
    # waited for in the background so that a signal runs the traps at once.
    setpriv --pdeathsig KILL -- "$VM/run-guest" --qemu "$QEMU" \
        --guest "$GUEST" --drive "$DRIVE" --out "$LOGS/boot$b" \
        --timeout "$BOOT_TIMEOUT" --append "$2" &
    guest_pid=$!
    wait $guest_pid || rc=$?
    guest_pid=""
    if [ $rc = 1 ]; then
        die "QEMU could not run the guest (see above)"
    fi
    [ -n "$3" ] && ref=(--reference "$3")
    "$VM/guest-report" summary --results "$LOGS/boot$b.results" \
        --stats "$LOGS/boot$b.stats.json" "${ref[@]}"
}

if [ "$COPIES" -gt 1 ]; then
    step "boot 1: mkfs, write files (node $SICK is killed -9 as the guest" \
         "starts to copy them), check them after a remount, throughput"
    # the guest prints its sources just before it copies them to the disk
    "$VM/kill-node-when" "$POOL_DIR" $SICK "$LOGS/boot1.results" \
        "QS sources" "QS end" "$BOOT_TIMEOUT" > "$LOGS/kill.log" &
    killer=$!
else
    step "boot 1: mkfs, write files, check them after a remount, throughput"
fi
boot 1 "qs.mode=write qs.files_mib=$FILES_MIB qs.seq_mib=$SEQ_MIB \
qs.rand_ops=$RAND_OPS" "" || {
    echo
    die "boot 1 failed; guest console in $LOGS/boot1.console"
}
if [ -n "$killer" ]; then
    rc=0
    wait "$killer" || rc=$?
    killer=""
    sed 's/^/   /' "$LOGS/kill.log"
    [ $rc = 0 ] || die "node $SICK was not killed and restarted during boot 1"
    state=$("$VM/guest-report" node-state --stats "$LOGS/boot1.stats.json" \
        --node $SICK)
    # the kill must have been noticed, and gone on from without an error
    case "$state" in
    failed*) ;;
    *) die "node $SICK was killed but not marked failed ($state)" ;;
    esac
    echo "   node $SICK: $state; the guest saw no error (failed" \
         "requests: 0 above)"
fi
took

step "the storage goes away: killing every node, then restarting it" \
     "on its LUN file"
# $1: running or stopped.  How many nodes are in that state.
count_nodes() {
    "$HARNESS" status --pool-dir "$POOL_DIR" | grep -c " $1\$" || true
}
for ((i = 0; i < NODES; i++)); do
    "$HARNESS" kill --pool-dir "$POOL_DIR" --node $i
done
echo "   tgtd killed (SIGKILL): $(count_nodes stopped) of $NODES" \
     "$nodes_word stopped"
for ((i = 0; i < NODES; i++)); do
    "$HARNESS" restart --pool-dir "$POOL_DIR" --node $i
done
echo "   restarted on the same portals and LUN files: $(count_nodes running)" \
     "of $NODES running"
took

if [ "$COPIES" -gt 1 ]; then
    step "boot 2: the same disk, after the restart: node $SICK is resynced" \
         "in the background while the guest runs fsck and checks every file"
else
    step "boot 2: the same disk, after the restart: fsck and every file"
fi
boot 2 "qs.mode=verify" "$LOGS/boot1.results" || {
    echo
    die "boot 2 failed (see the verdict above); guest console in" \
        "$LOGS/boot2.console"
}
if [ "$COPIES" -gt 1 ]; then
    grep "node index $SICK .* is live again" "$LOGS/boot2.qemu.log" |
        sed 's/^/   /' | grep . ||
        die "node $SICK was not resynced during boot 2 (see" \
            "$LOGS/boot2.qemu.log)"
    echo "   node $SICK: $("$VM/guest-report" node-state \
        --stats "$LOGS/boot2.stats.json" --node $SICK)"
fi
took

echo
echo "== all checks passed: $NODES $nodes_word${NODE_RATE:+ at $NODE_RATE}," \
     "$COPIES $([ "$COPIES" = 1 ] && echo copy || echo copies)," \
     "cache=$CACHE_MODE"
