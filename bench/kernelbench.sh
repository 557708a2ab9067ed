#!/usr/bin/env bash
# kbot on KernelBench, on a GPU host (issue 17, deliverable 6). Reads the user's KernelBench
# checkout from OUTSIDE this tree (never copied in); results go to the work dir, and the
# measured numbers are then written up by hand in bench/results/kernelbench.md.
#
#   KERNELBENCH=/path/to/KernelBench bench/kernelbench.sh            # the representative subset
#   KERNELBENCH=... LEVEL=1 PROBLEMS=1-100 bench/kernelbench.sh       # any selection
#
# The run is resumable: re-running the same command continues where a kill or the device
# session's end stopped it (finished problems are never run again), so a subset can be
# spread over several device sessions. Change the selection freely between sessions; every
# other option must stay the same (the command says which one differs).
set -euo pipefail

: "${KERNELBENCH:?set KERNELBENCH to a checkout of https://github.com/ScalingIntelligence/KernelBench}"
WORK="${WORK:-$PWD/.kbot/kernelbench-h200}"
BUDGET="${BUDGET:-5m}"
PROPOSERS="${PROPOSERS:-codegen,tune,inductor}"
PYTHON="${PYTHON:-python}"

# The default subset: problem numbers spread over each level (no LLM), about 60 + 45
# problems. Check them against the checkout's file names before a device session and list
# the exact ids run in bench/results/kernelbench.md.
LEVEL1="${LEVEL1_PROBLEMS:-1-4,6,9,13,19-27,29-32,34-42,47-53,88-100}"
LEVEL2="${LEVEL2_PROBLEMS:-1-20,29,33,40,45,53,56,59,62-66,68,70,76,81,84,86,88,99}"

git -C "$KERNELBENCH" rev-parse HEAD > /dev/null 2>&1 \
  && echo "KernelBench commit: $(git -C "$KERNELBENCH" rev-parse HEAD)"
"$PYTHON" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name())'

run() {  # level, problems
  "$PYTHON" -m kbot bench kernelbench --root "$KERNELBENCH" --level "$1" --problems "$2" \
    --proposers "$PROPOSERS" --time-budget-per-problem "$BUDGET" --device cuda \
    --work-dir "$WORK" --resume
}

if [[ -n "${LEVEL:-}" ]]; then
  run "$LEVEL" "${PROBLEMS:-all}"
else
  run 1 "$LEVEL1"
  run 2 "$LEVEL2"
fi
echo "report: $WORK/kernelbench.md (and kernelbench.json, kernelbench_speedups.png)"
