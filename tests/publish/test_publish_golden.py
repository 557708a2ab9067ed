"""Golden files for every template the publisher renders. Regenerate after an intended change
with `UPDATE_GOLDEN=1 pytest tests/publish/test_publish_golden.py` and review the diff."""

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest

from kbot.publish.artifacts import build_publication
from kbot.publish.rundir import load_run_dir

GOLDEN = Path(__file__).parent / "golden"
FIXTURES = Path(__file__).parent / "fixtures"
BASE_SHA = "0123456789abcdef0123456789abcdef01234567"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; UPDATE_GOLDEN=1 to accept"


def _files(publication) -> dict[str, str]:
    return {Path(f.path).name: f.content for f in publication.files}


@pytest.mark.parametrize("style", ["custom_op", "function"])
def test_parity_test_and_bench_script_goldens(style, make_run, target_repo):
    run = load_run_dir(make_run(style))
    files = _files(build_publication(run, target_repo, "", BASE_SHA, ("kbot", "performance")))
    _check(f"{style}.parity_test.py.expected", files[f"test_{run.op}_triton_parity.py"])
    _check(f"{style}.bench_script.py.expected", files[f"bench_{run.op}_triton.py"])


def test_pr_body_golden_not_timed(make_run, target_repo):
    publication = build_publication(
        load_run_dir(make_run("custom_op")), target_repo, "", BASE_SHA, ("kbot",)
    )
    _check("custom_op.pr_body.md.expected", f"{publication.title}\n\n{publication.body}")
    assert "not timed (no GPU)" in publication.body and "µs" not in publication.body


def test_pr_body_golden_timed(make_run, target_repo):
    run_dir = make_run("fused_op", time_share=0.23, time_kind="device")
    shutil.copy(FIXTURES / "runs" / "rmsnorm_layer_report_timed.json", run_dir / "report.json")
    publication = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",))
    _check("fused_op_timed.pr_body.md.expected", f"{publication.title}\n\n{publication.body}")
    marker = json.loads(publication.body.rsplit("<!-- kbot:", 1)[1].split(" -->")[0])
    assert marker["base_sha"] == BASE_SHA and marker["op"] == "rmsnorm"
    assert "23%" in publication.body


def test_bench_script_golden_with_the_existing_fast_path(make_run, tmp_path):
    """tinyserve's RMSNorm has its own forward_cuda: the benchmark gets an "existing" column."""
    maker = Path(__file__).resolve().parents[2] / "examples" / "tinyserve" / "make_demo_repo.py"
    spec = importlib.util.spec_from_file_location("tinyserve_demo_golden", maker)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    repo = module.make_demo_repo(tmp_path / "tinyserve")
    run = load_run_dir(make_run("custom_op", file="tinyserve/layers/norm.py", line=12))
    files = _files(build_publication(run, repo, "", BASE_SHA, ("kbot",)))
    _check("tinyserve_existing.bench_script.py.expected", files[f"bench_{run.op}_triton.py"])


def test_pr_body_says_when_trials_matched_the_float32_reference(make_run, target_repo):
    run_dir = make_run("fused_op")
    report = json.loads((FIXTURES / "runs" / "rmsnorm_layer_report_timed.json").read_text())
    for case in report["verdict"]["cases"]:
        case["correctness"]["float32_reference_trials"] = 1
    (run_dir / "report.json").write_text(json.dumps(report))
    publication = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",))
    cases = len(report["verdict"]["cases"])
    assert f"In {cases} trial(s) the kernel missed the original code's own" in publication.body


def test_host_times_of_a_verdict_from_before_kbot_measured_them_say_so():
    from kbot.evaluate.verdict import NOT_MEASURED
    from kbot.publish.render import host_triple

    assert host_triple(None) == NOT_MEASURED
    assert host_triple([None, None, None]) == NOT_MEASURED
    assert host_triple([22.0, None, 9.5]) == "22.0 / – / 9.50"


def test_the_sweep_table_is_a_markdown_table(make_run, target_repo):
    # A table needs a blank line before it; the template's `{% endif %}` used to eat it, and
    # GitHub showed the rows as one paragraph of pipes.
    run_dir = make_run("fused_op")
    report = json.loads((run_dir / "report.json").read_text())
    report["sweep"] = {
        "points": [
            {"size": 4096, "to": 896, "status": "passed", "reasons": []},
            {"size": 16, "to": 8, "kind": "rows", "status": "passed", "reasons": []},
        ],
        "note": "",
    }
    (run_dir / "report.json").write_text(json.dumps(report))
    body = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",)).body
    assert "passed.\n\n| size | changed to | result |\n|---|---|---|\n| 4096 | 896 |" in body
    assert "| 16 rows | two leading dims, 2 x 8 | passed |" in body
