"""bench/evaluator_soak.py end to end on the CPU, in miniature: a cheat the static rules stop,
a candidate that runs out of memory, and the probe before and after it, through one
evaluator. Every verdict must match its expectation, land in the log and reach the report.
About 15-25 s on two busy cores (each candidate that runs starts a fresh process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_soak_smoke_runs_end_to_end(tmp_path):
    out, log = tmp_path / "soak.md", tmp_path / "soak.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "evaluator_soak.py"),
            "--device",
            "cpu",
            "--smoke",
            "--seed",
            "5",
            "--time-limit",
            "240",
            "--only",
            "secret_etc_passwd,oom_huge_empty",
            "--out",
            str(out),
            "--log",
            str(log),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "run" and lines[0]["seed"] == 5
    verdicts = {v["id"]: v for v in lines if v["type"] == "verdict"}
    probes = [k for k in verdicts if k.startswith("probe/")]
    # the probe first, right after the fault, and last (unless the fault came last)
    assert len(probes) in (2, 3) and "probe/0" in probes
    assert set(verdicts) - set(probes) == {
        "redteam/secret_etc_passwd@add_rmsnorm",
        "fault/oom_huge_empty@quick_gelu",
    }
    assert verdicts["fault/oom_huge_empty@quick_gelu"]["rules"] == ["forward-error"]
    assert verdicts["redteam/secret_etc_passwd@add_rmsnorm"]["stage"] == "static"
    assert all(v["accepted"] for k, v in verdicts.items() if k.startswith("probe/"))
    report = out.read_text(encoding="utf-8")
    assert "0 false accepts, 0 false rejects" in report
    assert "judge restarts: 0" in report
    assert "| fault/oom_huge_empty@quick_gelu | out-of-memory |" in report
    assert report.strip() in done.stdout
