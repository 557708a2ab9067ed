#!/usr/bin/env bash
# kbot against a real checkout, on this machine's GPU: scan -> optimize one configured target ->
# dry-run PR -> the PR's parity test and benchmark inside kbot's clone.
#   bash bench/real_repo.sh CHECKOUT CONFIG OP [BARE_PACKAGE] [OUT_MD]
# e.g. bash bench/real_repo.sh .ext/lmdeploy bench/targets/lmdeploy.kbot.yml layer_norm_residual lmdeploy
# The checkout is a git clone of the target (never committed to kbot); its CONFIG is copied in as
# .kbot.yml (untracked there, so kbot's own clone of the repo does not carry it).
set -euo pipefail
checkout=$(realpath "$1"); config=$(realpath "$2"); op=$3; bare=${4:-}; out=${5:-${OUT:-/tmp}/publish_real.md}
kbot_root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/kbot-real-XXXX)
if [ -e "$checkout/.kbot.yml" ] && ! cmp -s "$config" "$checkout/.kbot.yml"; then
    echo "$checkout/.kbot.yml exists and differs from $config; not overwriting it" >&2; exit 2
fi
cp "$config" "$checkout/.kbot.yml"
cd "$checkout"
python3 -m kbot scan . --emit-problems "$work/problems" | grep -E "target\(s\)|$op"
python3 -m kbot optimize "$work/problems/$op.py" --config "$checkout/.kbot.yml" --work-dir "$work" --json > "$work/optimize.json"
run_dir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["run_dir"])' "$work/optimize.json")
cat "$run_dir/report.md"
cd "$kbot_root"
python3 bench/publish_gpu.py --repo "$checkout" --run-dir "$run_dir" --out "$out" ${bare:+--bare-package "$bare"}
