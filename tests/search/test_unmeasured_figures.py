"""Figures that were not measured: a NaN roofline is written as null and shown as "not
measured" (report.json, report.md, kernel.py's header, the PR table), and a verdict with one
untimed case keeps the timings of the others."""

import dataclasses
import json
import math

from kbot.evaluate.verdict import Verdict
from kbot.publish.render import environment
from kbot.search import Budget, OptimizeOptions, OptimizeStatus, optimize
from kbot.search.fitness import fitness_of


def _wrapping(fakes, change):
    """A timed FakeEvaluator whose verdicts pass through `change(verdict)`."""

    class Changed(fakes.FakeEvaluator):
        def _verdict(self, problem, source, factor):
            return change(super()._verdict(problem, source, factor))

    return Changed(timed=True)


def _no_roofline(verdict: Verdict) -> Verdict:
    cases = tuple(
        dataclasses.replace(c, timing=dataclasses.replace(c.timing, roofline_fraction=math.nan))
        if c.timing
        else c
        for c in verdict.cases
    )
    return dataclasses.replace(verdict, cases=cases)


def _second_case_untimed(verdict: Verdict) -> Verdict:
    if not verdict.cases:
        return verdict
    cases = (verdict.cases[0], dataclasses.replace(verdict.cases[1], timing=None))
    return dataclasses.replace(verdict, cases=cases)


def _run(tmp_path, problem, fakes, evaluator):
    return optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=1)),
        tmp_path / "work",
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [fakes.FakeProposer()],
    )


def test_unmeasured_roofline_is_null_in_report_json_and_not_measured_in_text(
    tmp_path, problem, fakes
):
    result = _run(tmp_path, problem, fakes, _wrapping(fakes, _no_roofline))
    assert result.has_winner and result.report_json_path is not None
    text = result.report_json_path.read_text()
    report = json.loads(text)  # strict JSON: no NaN token
    assert "NaN" not in text
    assert [c["timing"]["roofline_percent"] for c in report["cases"]] == [None, None]
    assert report["winner"]["roofline_fraction"] is None
    assert all(c["timing"]["roofline_fraction"] is None for c in report["verdict"]["cases"])
    markdown = result.report_md_path.read_text()
    assert "not measured" in markdown and "nan" not in markdown.lower()
    header = result.kernel_path.read_text()
    assert "roofline not measured" in header and "nan%" not in header
    # the reader gives the NaN back
    verdict = Verdict.from_json(report["verdict"])
    assert all(math.isnan(c.timing.roofline_fraction) for c in verdict.cases)


def test_pr_filters_say_not_measured_never_zero_or_nan():
    percent = environment().filters["percent"]
    times = environment().filters["times"]
    assert percent(math.nan) == percent(None) == "not measured"
    assert times(math.nan) == "not measured"
    assert percent(0.431) == "43%" and percent(0.002) == "0.2%" and times(1.234) == "1.23x"


def test_one_untimed_case_keeps_the_timed_ones(tmp_path, problem, fakes):
    result = _run(tmp_path, problem, fakes, _wrapping(fakes, _second_case_untimed))
    verdict = result.verdict
    assert verdict is not None and verdict.timed
    assert verdict.untimed_cases == ({"N": 1000},)
    assert verdict.speedup_geomean("compile") == verdict.cases[0].timing.speedup_vs_compile
    assert result.status in (OptimizeStatus.IMPROVED, OptimizeStatus.NOT_FASTER)
    fitness = fitness_of(verdict, "")
    assert fitness.timed and fitness.speedup is not None
    report = json.loads(result.report_json_path.read_text())
    assert report["timed"] is True and report["device"] == "NVIDIA Fake"
    assert report["untimed_cases"] == ["N=1000"]
    assert report["verdict"]["untimed_cases"] == [{"N": 1000}]
    markdown = result.report_md_path.read_text()
    assert "| N=1000 | not timed |" in markdown and "Not timed: N=1000" in markdown
    header = result.kernel_path.read_text()
    assert "N=1000: not timed" in header and "CPU interpreter" not in header
