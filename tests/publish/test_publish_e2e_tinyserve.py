"""`kbot run` end to end on the example repository, offline: the real scan, search (on a CPU
under Triton's interpreter, correctness-checked and not timed; on a GPU host, timed) and
dry-run publish. Kept to one target and a 60 s search budget so it costs about a minute."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import torch

from kbot.config import load_config
from kbot.evaluate import NOT_TIMED
from kbot.publish.pipeline import extract_targets, run_pipeline

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tinyserve"


def _make_demo_repo(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "tinyserve_demo_e2e", EXAMPLE / "make_demo_repo.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_demo_repo(dest)


def _report_reasons(run_dir: str) -> str:
    """What report.md says about the candidates (why none was accepted), for the failure."""
    report = Path(run_dir) / "report.md" if run_dir else None
    return report.read_text()[-3000:] if report and report.is_file() else "(no report.md)"


def test_kbot_run_dry_run_leaves_a_ready_branch_and_pr_body(tmp_path):
    repo = _make_demo_repo(tmp_path / "tinyserve")
    config = load_config(repo, cli={"search.time_budget_s": 60, "search.seeds": 5})
    work_dir = tmp_path / "work"

    def only_rmsnorm(path, config, work_dir):
        return [e for e in extract_targets(path, config, work_dir) if e.name == "rmsnorm"]

    with open(os.devnull, "w") as quiet:
        rows = run_pipeline(repo, config, work_dir, False, extract=only_rmsnorm, log=quiet)
    assert [r.op for r in rows] == ["rmsnorm"]
    row = rows[0]
    assert row.action == "dry_run", (row, _report_reasons(row.run_dir))
    drafts = work_dir / "publish" / "rmsnorm"
    body = (drafts / "pr_body.md").read_text()
    assert "<!-- kbot:" in body
    if torch.cuda.is_available():  # the winner is timed, and the PR states its speed
        assert re.fullmatch(r"\d+\.\d\dx vs (torch\.compile|eager).*", row.result), row
        assert "Median µs per call" in body and NOT_TIMED not in body
    else:
        assert NOT_TIMED in row.result and NOT_TIMED in body
    clone = work_dir / "publish" / "repo"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:]
