#!/usr/bin/env bash
# A default `kbot optimize` (10-minute time budget, default proposers and generations) of one
# bench problem on the device machine, timed from the outside. A device command lasts at most
# 10 minutes, so the run starts in its own process session and two commands share it:
#   bash bench/default_run.sh start rmsnorm   # installs, starts the run, waits up to START_WAIT_S
#   bash bench/default_run.sh wait            # waits for it to end, copies its report to $OUT
# The second must follow within the machine's idle window, or the machine (and run) is gone.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kbot-out}"
RUN=/tmp/kbot-default
mkdir -p "$OUT" "$RUN"

wait_for_run() {  # seconds
    local deadline=$((SECONDS + $1))
    while [ ! -f "$RUN/done" ] && [ $SECONDS -lt $deadline ]; do sleep 5; done
    if [ -f "$RUN/done" ]; then
        read -r rc wall <"$RUN/done"
        echo "kbot optimize ended: exit $rc, wall ${wall}s (measured outside the process)"
    else
        echo "still running after $(( $(date +%s) - $(cat "$RUN/start") ))s"
    fi
}

case "${1:-}" in
    start)
        problem="bench/problems/${2:?problem name}.py"
        bash bench/h200.sh >/dev/null  # installs kbot, writes $OUT/env.txt
        cat "$OUT/env.txt"
        date +%s >"$RUN/start"
        echo "python3 -m kbot optimize $problem --work-dir $RUN/work --json" >"$RUN/command"
        setsid nohup bash -c "start=\$(date +%s); python3 -m kbot optimize $problem \
            --work-dir $RUN/work --json >$RUN/events.jsonl 2>$RUN/stderr.log; \
            echo \$? \$(( \$(date +%s) - start )) >$RUN/done" >/dev/null 2>&1 &
        wait_for_run "${START_WAIT_S:-540}"
        ;;
    wait)
        wait_for_run "${WAIT_S:-540}"
        cp "$RUN/command" "$RUN/stderr.log" "$OUT/" 2>/dev/null
        tail -n 3 "$RUN/events.jsonl" >"$OUT/events_tail.jsonl" 2>/dev/null
        (cd "$RUN/work" && tar czf "$OUT/default_run.tgz" runs/*/report.md runs/*/report.json \
            runs/*/best_candidate.py 2>/dev/null)
        tail -n 40 "$RUN"/work/runs/*/report.md 2>/dev/null
        ;;
    *) echo "usage: bench/default_run.sh start PROBLEM | wait" >&2; exit 2 ;;
esac
