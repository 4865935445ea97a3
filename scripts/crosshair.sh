#!/usr/bin/env bash
# CrossHair on the reference model's pure functions (issue 12):
#   1. crosshair check: the contracts of refqueue.model.decisions (the pause
#      hysteresis, reclaim due-ness and order, deadline arithmetic) and
#      refqueue.model.contracts.invariants_hold (every action preserves every
#      invariant, on scripts of up to 8 steps);
#   2. crosshair diffbehavior: the model's pause and reclaim decisions against
#      the production queue's own (refqueue._decisions).
# Prints, per target, the conditions checked (confirmed over all paths, or
# not confirmed within the time) and the paths explored, and fails (exit 1)
# on any counterexample, any difference, or any CrossHair error.
# Time: CROSSHAIR_TIMEOUT (default 2 s) per condition of the decisions,
# CROSSHAIR_DEEP_TIMEOUT (default 15 s) for the invariants and for the two
# comparisons.  Under 2 minutes on 2 shared cores.
set -uo pipefail
cd "$(dirname "$0")/.."
CROSSHAIR=${CROSSHAIR:-.venv/bin/crosshair}
SHORT=${CROSSHAIR_TIMEOUT:-2}
DEEP=${CROSSHAIR_DEEP_TIMEOUT:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
total_conditions=0
total_paths=0

# paths explored = CrossHair's explore-loop iterations (from --verbose)
count_paths() { grep -c "explore_loop() Iteration" "$1" || true; }

check() {  # check TARGET TIMEOUT
    local target=$1 timeout=$2 rc
    "$CROSSHAIR" check --per_condition_timeout="$timeout" --report_all --verbose "$target" \
        >"$work/out" 2>"$work/err"
    rc=$?
    local confirmed unconfirmed errors paths
    confirmed=$(grep -c "info: Confirmed over all paths" "$work/out" || true)
    unconfirmed=$(grep -c "info: Not confirmed" "$work/out" || true)
    errors=$(grep -c ": error: " "$work/out" || true)
    paths=$(count_paths "$work/err")
    total_conditions=$((total_conditions + confirmed + unconfirmed + errors))
    total_paths=$((total_paths + paths))
    printf 'crosshair check %-36s %2d conditions (%d confirmed over all paths, %d not confirmed in %ss), %6d paths explored, %d counterexamples\n' \
        "$target" $((confirmed + unconfirmed + errors)) "$confirmed" "$unconfirmed" "$timeout" "$paths" "$errors"
    if [ "$rc" -ne 0 ] || [ "$errors" -ne 0 ] || [ $((confirmed + unconfirmed)) -eq 0 ]; then
        grep ": error: " "$work/out" || true
        grep -v "^[0-9.]*|" "$work/err" | grep -iE "error|exception|traceback" | head -20 || true
        echo "crosshair check $target FAILED (exit $rc)"
        failed=1
    fi
}

diff_behavior() {  # diff_behavior F1 F2 TIMEOUT
    local f1=$1 f2=$2 timeout=$3 rc
    "$CROSSHAIR" diffbehavior --per_condition_timeout="$timeout" --verbose "$f1" "$f2" >"$work/out" 2>"$work/err"
    rc=$?
    local paths verdict
    paths=$(count_paths "$work/err")
    total_paths=$((total_paths + paths))
    verdict=$(grep -m1 -E "No differences found|Given:" "$work/out" || echo "no verdict")
    printf 'crosshair diffbehavior %-30s vs %-32s %6d paths explored: %s\n' "$f1" "$f2" "$paths" "$verdict"
    if [ "$rc" -ne 0 ] || ! grep -q "No differences found" "$work/out"; then
        cat "$work/out"
        echo "crosshair diffbehavior $f1 $f2 FAILED (exit $rc)"
        failed=1
    fi
}

start=$SECONDS
check refqueue.model.decisions "$SHORT"
check refqueue.model.contracts.invariants_hold "$DEEP"
diff_behavior refqueue.model.decisions.next_paused refqueue._decisions.next_paused "$DEEP"
diff_behavior refqueue.model.decisions.reclaim_order refqueue._decisions.reclaim_order "$DEEP"
echo "crosshair: $total_conditions conditions checked, $total_paths paths explored, $((SECONDS - start)) s"
if [ "$failed" -ne 0 ]; then
    echo "crosshair: FAILED"
    exit 1
fi
echo "crosshair: no counterexample, no difference"
