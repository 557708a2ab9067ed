#!/usr/bin/env bash
# One full run on the device machine (H200): install kbot, run the GPU tests and the benchmarks
# named as arguments, keep every log under $OUT, print a short table last.
#   bash bench/h200.sh gputests evaluator optimize publish capture real
# (real needs an LMDeploy clone at .ext/lmdeploy, carried: see bench/real_repo.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kbot-out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q -e . --no-deps --no-build-isolation >"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
} | tee "$OUT/env.txt"

declare -A STATUS
run_step() {  # name, timeout seconds, command...
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    STATUS[$name]="rc=$rc $((SECONDS - start))s"
    tail -n 25 "$OUT/$name.log"
}

for step in "$@"; do
    case "$step" in
        gputests) run_step gputests "${GPUTESTS_S:-280}" python3 -m pytest -m gpu -v -rfEs -p no:cacheprovider --timeout="${GPUTEST_TIMEOUT_S:-150}" ${GPUTESTS_ARGS:-tests} ;;
        evaluator) run_step evaluator "${EVALUATOR_S:-280}" python3 bench/evaluator_bench.py --out "$OUT/evaluator.md" --time-limit "${EVALUATOR_LIMIT_S:-220}" ;;
        optimize) run_step optimize "${OPTIMIZE_S:-560}" python3 bench/optimize_suite.py --out "$OUT/optimize.md" --time-limit "${OPTIMIZE_LIMIT_S:-480}" --work-dir /tmp/kbot-suite ${OPTIMIZE_ARGS:-}
                  # each op's run report (which candidate did what, for how long), one archive
                  (cd /tmp/kbot-suite && find runs \( -name report.md -o -name report.json \) -print0 \
                      | tar -czf "$OUT/optimize-reports.tgz" --null -T -) 2> /dev/null ;;
        capture) run_step capture "${CAPTURE_S:-240}" python3 bench/inductor_capture.py --out /tmp/kbot-inductor ${CAPTURE_ARGS:-}
                 tar czf "$OUT/inductor.tgz" -C /tmp/kbot-inductor . ;;  # one file: $OUT returns few
        real) run_step real "${REAL_S:-420}" bash bench/real_repo.sh .ext/lmdeploy bench/targets/lmdeploy.kbot.yml layer_norm_residual lmdeploy "$OUT/publish_real.md" ;;
        publish) run_step publish "${PUBLISH_S:-300}" python3 bench/publish_gpu.py --out "$OUT/publish.md" ${PUBLISH_ARGS:-} ;;
        *) echo "unknown step $step" ;;
    esac
done

echo
echo "| step | result |"
echo "|---|---|"
for step in "$@"; do echo "| $step | ${STATUS[$step]:-not run} |"; done
