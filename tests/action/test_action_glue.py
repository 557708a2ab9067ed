"""The pieces behind the Action's steps: outputs that cannot be injected, the capped matrix, an
optimize job's target and cache key, and the combined summary of a timed run (golden)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from kbot.action.matrix import build_matrix
from kbot.action.outputs import format_outputs, parse_outputs
from kbot.action.prepare import prepare_target, wanted_op
from kbot.errors import UsageError
from kbot.publish.job_summary import render_publish_summary
from kbot.publish.summary import RunRow

PUBLISH_FIXTURES = Path(__file__).resolve().parents[1] / "publish" / "fixtures" / "runs"
GOLDEN = Path(__file__).parent / "golden"


def test_an_output_value_cannot_end_early_or_inject_another_output() -> None:
    hostile = "line one\nresult=forged\nEOF\nok<<EOF\ntrue"
    text = format_outputs({"error": hostile, "ok": "false"})
    assert parse_outputs(text) == {"error": hostile, "ok": "false"}
    with pytest.raises(ValueError):
        format_outputs({"bad name": "x"})


def _scan_data(names: list[str], emitted: set[str]) -> dict:
    findings = [
        {"rank": i, "name": n, "status": "target", "target": f"m.py::{n}", "kind": "marker",
         "file": "m.py", "line": i, "qualname": n, "profile": {"time_share": 0.5 / i}}
        for i, n in enumerate(names, 1)
    ]  # fmt: skip
    findings.append({"rank": 99, "name": "fast", "status": "skipped", "skip_reason": "has | fast"})
    problems = [
        {"name": n, "status": "emitted" if n in emitted else "skipped", "path": f"/p/{n}.py"}
        for n in names
    ]
    return {"findings": findings, "problems": problems, "files_scanned": 3}


def test_the_matrix_keeps_the_rank_order_caps_and_says_why_the_rest_is_out() -> None:
    matrix = build_matrix(_scan_data(["a", "b", "c", "d"], {"a", "c", "d"}), max_targets=2)
    assert [e["op"] for e in matrix.to_json()["include"]] == ["a", "c"]
    jobs = {row.op: row.job for row in matrix.rows}
    assert jobs["b"].startswith("no problem") and jobs["d"] == "left out (max-targets 2)"
    assert jobs["fast"] == "skipped: has | fast"
    assert matrix.rows[0].time_share == 0.5
    with pytest.raises(ValueError):
        build_matrix({}, 0)


def test_prepare_finds_the_target_and_names_its_cache(tmp_path) -> None:
    problem = tmp_path / "rms.py"
    problem.write_text("class Model: ...\n")
    data = {"problems": [{"name": "rms", "status": "emitted", "path": str(problem)}]}
    entry = json.dumps({"op": "rms", "rank": 1})
    prepared = prepare_target(data, entry, "NVIDIA H200", "77-2")
    assert prepared.gpu_model == "nvidia-h200" and prepared.artifact == "kbot-run-rms"
    assert (
        prepared.cache_restore_key
        == f"kbot-store-v1-nvidia-h200-rms-{prepared.reference_sha256[:16]}-"
    )
    assert prepared.cache_key == prepared.cache_restore_key + "77-2"
    assert prepared.target_json == tmp_path / "rms.target.json"
    with pytest.raises(UsageError, match="not among the ops"):
        prepare_target(data, "other", "cpu", "1")
    with pytest.raises(UsageError):
        wanted_op("rms; rm -rf /")


def test_combined_summary_of_a_timed_run_golden(tmp_path) -> None:
    run = tmp_path / "runs" / "rmsnorm"
    shutil.copytree(PUBLISH_FIXTURES / "rmsnorm_layer", run)
    shutil.copy(PUBLISH_FIXTURES / "rmsnorm_layer_report_timed.json", run / "report.json")
    rows = [
        RunRow("layers/norm.py::RMSNorm", "rmsnorm", "published", "1.31x vs torch.compile",
               "created", "https://github.com/o/r/pull/12", run_dir=str(run),
               pr_url="https://github.com/o/r/pull/12"),
        RunRow("layers/act.py::Gelu", "gelu", "optimize", "no kernel accepted", "skipped",
               "no candidate passed | correctness"),
        RunRow("layers/rope.py::Rope", "rope", "optimize", "no run directory", "failed",
               "its optimize job uploaded no run directory; see that job's log"),
    ]  # fmt: skip
    text = render_publish_summary("publish", rows, pushed=True)
    assert "Median µs per call" in text and "[#12](https://github.com/o/r/pull/12)" in text
    path = GOLDEN / "publish_timed.summary.md"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), "UPDATE_GOLDEN=1 to accept a change"


def test_the_gpu_model_in_the_cache_key_is_what_cuda_may_use(tmp_path, monkeypatch):
    """nvidia-smi names the runner's first GPU; a runner that hides its GPUs from CUDA runs
    kbot on the CPU, so its store is keyed as a CPU runner's."""
    from kbot.action.prepare import detect_gpu_model

    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200'\necho 'NVIDIA H200'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert detect_gpu_model() == "NVIDIA H200"
    for hidden in ("", "-1"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        assert detect_gpu_model() == "cpu"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert detect_gpu_model() == "cpu"
