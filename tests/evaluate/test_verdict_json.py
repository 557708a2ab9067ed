"""One reader of the verdict JSON (`Verdict.from_json`): the worker protocol, the search store
and the publisher's run directory read the same JSON into the same Verdict."""

import dataclasses
import json
import math
from pathlib import Path

import pytest

from kbot.evaluate.protocol import CandidateOutcome
from kbot.evaluate.verdict import (
    CaseCorrectness,
    CaseResult,
    CaseTiming,
    Reason,
    Stage,
    Stat,
    Verdict,
    VerdictFormatError,
    finite_json,
)
from kbot.publish.rundir import RunDirError
from kbot.publish.rundir import verdict_from_json as rundir_reader
from kbot.search.codec import verdict_from_text, verdict_to_text


def _verdict() -> Verdict:
    stat = Stat(10.0, 0.2, 200)
    timing = CaseTiming(
        stat, stat, Stat(30.0, 0.3, 200), Stat(40.0, 0.3, 200), None, None, None,
        bytes_moved=4096, flops=0, roofline_fraction=math.nan, speedup_vs_eager=3.0,
        speedup_vs_compile=None,
    )  # fmt: skip
    correctness = CaseCorrectness({"T": 1}, 5, ("normal", "uniform"), 0.0, 1e-3, 1e-2, 1e-2, True)
    cases = (
        CaseResult({"T": 1}, correctness, timing),
        CaseResult({"T": 64}, correctness, None),
    )
    return Verdict(
        True, Stage.DONE, (Reason("timing", "case T=64 not captured", None),), "NVIDIA H200",
        cases, seeds=5, wall_s=1.5, versions={"torch": "2.11"}, base_seed=7,
    )  # fmt: skip


def _same(a: Verdict, b: Verdict) -> None:
    # NaN != NaN, so compare the JSON forms (null for NaN)
    assert finite_json(a.to_json()) == finite_json(b.to_json())


def test_the_three_readers_agree():
    verdict = _verdict()
    strict = json.loads(json.dumps(finite_json(verdict.to_json())))  # report.json's form
    _same(Verdict.from_json(strict), verdict)
    _same(verdict_from_text(verdict_to_text(verdict)), verdict)  # the store
    _same(rundir_reader(strict, Path("report.json")), verdict)  # the publisher
    outcome = CandidateOutcome(True, Stage.DONE, verdict.reasons, verdict.cases)
    wire = CandidateOutcome.from_json(json.loads(json.dumps(outcome.to_json())))  # the worker
    _same(dataclasses.replace(verdict, cases=wire.cases, reasons=wire.reasons), verdict)


def test_unmeasured_figures_come_back_as_nan_and_not_timed_as_none():
    data = finite_json(_verdict().to_json())
    assert data["cases"][0]["timing"]["roofline_fraction"] is None
    assert data["cases"][1]["timing"] == "not timed (no GPU)"
    back = Verdict.from_json(data)
    assert math.isnan(back.cases[0].timing.roofline_fraction)
    assert back.cases[1].timing is None
    assert back.cases[0].timing.speedup_vs_compile is None


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (("accepted",), "accepted"),
        (("device",), "device"),
        (("cases", 0, "timing", "bytes_moved"), "bytes_moved"),
        (("cases", 0, "timing", "eager_graph"), "eager_graph"),
        (("cases", 0, "correctness", "atol"), "atol"),
    ],
)
def test_a_missing_required_field_is_named_not_defaulted(path, named):
    data = finite_json(_verdict().to_json())
    node = data
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    with pytest.raises(VerdictFormatError, match=named):
        Verdict.from_json(data)
    with pytest.raises(RunDirError, match=named):
        rundir_reader(data, Path("report.json"))


def test_optional_fields_take_the_records_defaults():
    minimal = {"accepted": False, "stage": "static", "device": "cpu"}
    verdict = Verdict.from_json(minimal)
    assert verdict == Verdict(False, Stage.STATIC, (), "cpu")
    assert verdict_from_text(json.dumps(minimal)) == verdict


def test_the_terminal_text_says_not_measured_and_which_case_was_not_timed():
    from kbot.evaluate.report import render_verdict

    text = render_verdict(_verdict(), "rope", "candidate.py")
    assert "roofline not measured" in text and "nan" not in text.lower()
    assert "case T=64:" in text and "not timed (see the notes above)" in text
    assert "no GPU" not in text  # it ran on a GPU: one case could not be captured
