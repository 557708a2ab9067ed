"""The run report names the peak that bound each case's roofline fraction (report.json's
`roofline_peak`, report.md's roofline column); a verdict without one shows the bare percent."""

import dataclasses
import json

from kbot.search import Budget, OptimizeOptions, optimize


def _timing_rows(result) -> list[str]:
    lines = result.report_md_path.read_text().splitlines()
    return [line for line in lines if line.startswith("| N=") and "x |" in line]


def _run(tmp_path, problem, fakes, peak: str):
    class Named(fakes.FakeEvaluator):
        def _verdict(self, problem, source, factor):
            verdict = super()._verdict(problem, source, factor)
            cases = tuple(
                dataclasses.replace(c, timing=dataclasses.replace(c.timing, roofline_peak=peak))
                for c in verdict.cases
            )
            return dataclasses.replace(verdict, cases=cases)

    return optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=1)),
        tmp_path / "work",
        evaluator_factory=lambda *a: Named(timed=True),
        proposer_factory=lambda names: [fakes.FakeProposer()],
    )


def test_report_names_the_peak(tmp_path, problem, fakes):
    result = _run(tmp_path, problem, fakes, "copy 4.25 TB/s")
    report = json.loads(result.report_json_path.read_text())
    assert [c["timing"]["roofline_peak"] for c in report["cases"]] == ["copy 4.25 TB/s"] * 2
    rows = _timing_rows(result)
    assert len(rows) == 2 and all(row.endswith("% (copy 4.25 TB/s) |") for row in rows)


def test_report_without_a_named_peak_shows_the_percent_alone(tmp_path, problem, fakes):
    result = _run(tmp_path, problem, fakes, "")
    report = json.loads(result.report_json_path.read_text())
    assert [c["timing"]["roofline_peak"] for c in report["cases"]] == [None, None]
    rows = _timing_rows(result)
    assert len(rows) == 2 and all(row.endswith("% |") for row in rows)


def test_fitness_kernel_header_and_pr_table_name_the_peak(tmp_path, problem, fakes):
    from kbot.evaluate.verdict import Verdict
    from kbot.publish.artifacts import performance_context
    from kbot.publish.render import render

    result = _run(tmp_path, problem, fakes, "fp32 FMA 50.4 TFLOP/s")
    assert "% of roofline (fp32 FMA 50.4 TFLOP/s)" in result.fitness
    header = result.kernel_path.read_text().split('"""')[1]
    assert "% of roofline (fp32 FMA 50.4 TFLOP/s)" in header
    report = json.loads(result.report_json_path.read_text())
    verdict = Verdict.from_json(report["verdict"])
    table = render("performance.md.j2", **performance_context(verdict))
    rows = [line for line in table.splitlines() if line.startswith("| N=")]
    assert rows and all("% (fp32 FMA 50.4 TFLOP/s) |" in row for row in rows)
