# SPDX-License-Identifier: GPL-2.0-or-later
#
# Shared by qtests/run-upstream-iotests and qtests/run-asan-iotests
# (sourced): several runs of qemu-iotests' ./check merged into one TAP
# stream.  The caller sets $python and cd's into tests/qemu-iotests, prints
# "TAP version 13", calls run for each ./check run, then tap_finish.

total=0
failed=0
status=0

# tap_line RESULT DESCRIPTION OPTIONS: number a result of ./check, with
# the check options after the description ("raw 001 -stripe # SKIP why").
tap_line()
{
    local desc=$2 directive=""
    total=$((total + 1))
    if [[ $desc == *" # "* ]]; then
        directive=" # ${desc#* # }"
        desc=${desc%% # *}
    fi
    echo "$1 $total $desc $3$directive"
}

# run OPTIONS... -- TESTS...: one ./check run, its TAP lines passed on
# (its own header and plan become comments, the plan comes at the end).
run()
{
    local opts=() line rc
    while [ "$1" != -- ]; do
        opts+=("$1")
        shift
    done
    shift
    echo "# ./check -tap ${opts[*]} $*"
    while IFS= read -r line; do
        case "$line" in
        "TAP version"*) ;;
        1..*) echo "# $line" ;;
        "not ok "*)
            failed=$((failed + 1))
            tap_line "not ok" "${line#not ok }" "${opts[*]:1}"
            ;;
        "ok "*) tap_line ok "${line#ok }" "${opts[*]:1}" ;;
        *) echo "$line" ;;
        esac
    done < <(nice -n 19 "$python" ./check -tap "${opts[@]}" "$@")
    wait $! 2>/dev/null
    rc=$?
    if [ "$rc" != 0 ]; then
        status=1
    fi
}

# tap_finish: the plan, a summary and the exit status for the caller.
tap_finish()
{
    echo "1..$total"
    echo "# $((total - failed)) passed (skips included), $failed failed"
    if [ "$failed" != 0 ]; then
        status=1
    fi
    return $status
}
