"""The shape sweep (kbot.search.sweep): the final kernel checked at other models' sizes, and
the guard the publisher builds from what passed (kbot.publish.guard)."""

from __future__ import annotations

import ast

import pytest

from kbot.problem import load_problem
from kbot.publish.adapters.base import guard_terms
from kbot.publish.adapters.source import Param
from kbot.publish.callsite import KernelCall
from kbot.publish.guard import input_facts
from kbot.publish.module_facts import attribute_terms
from kbot.publish.swept import swept_scalars
from kbot.search import Budget, OptimizeOptions, optimize
from kbot.search.sweep import run_sweep, sweep_points, sweep_values

# An RMSNorm whose reference only takes widths that are a multiple of 64 (as many fused
# serving ops do): 80 is then a size the sweep cannot apply, not one the kernel failed.
NORM = """
import torch
from torch import nn

HIDDEN = 128


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden))
        self.hidden = hidden
        self.eps = eps

    def forward(self, x):
        assert x.shape[-1] % 64 == 0, "the width must be a multiple of 64"
        variance = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(variance + self.eps) * self.weight


CASES = [dict(T=1), dict(T=5)]
KBOT = dict(name="norm")


def get_inputs(T=1):
    return [torch.randn(T, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, 1e-06]
"""

# ModelNew builds its weight at the run's width, as codegen's constructor does; the sweep
# gives it Model's weight at each other width. BLOCK is the only difference between the two.
CANDIDATE = """
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    variance = tl.sum(x * x, axis=0) / n_cols
    out = x * tl.rsqrt(variance + eps) * w
    tl.store(out_ptr + row * n_cols + cols, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(128))
        self.eps = eps

    def forward(self, x):
        out = torch.empty_like(x)
        n_cols = x.shape[-1]
        _rms[(x.shape[0],)](x, self.weight, out, n_cols, self.eps, BLOCK=BLOCK_EXPR)
        return out
"""
GENERIC = CANDIDATE.replace("BLOCK_EXPR", "triton.next_power_of_2(n_cols)")
PINNED = CANDIDATE.replace("BLOCK_EXPR", "128")  # correct up to 128 columns only


def _problem(tmp_path, source=NORM):
    path = tmp_path / "norm.py"
    path.write_text(source)
    return load_problem(path)


def test_sizes_come_from_model_families_and_an_odd_width():
    assert sweep_values(128) == (64, 80, 256)
    assert sweep_values(2048) == (896, 2560, 8192, 3000)
    assert sweep_values(8192) == (896, 3000)
    assert sweep_values(14336) == (7168, 10753)  # past the widths: smaller and odd


def test_a_point_changes_every_literal_of_one_size_and_keeps_one_case(tmp_path):
    source = NORM.replace("return [torch.randn(T, HIDDEN)]", "return [torch.randn(T, 128), 7]")
    points, why = sweep_points(_problem(tmp_path, source), tmp_path / "sweep")
    assert why == "" and [p.label for p in points] == ["128->64", "128->80", "128->256"]
    tree = ast.parse(points[0].source)
    values = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert ast.literal_eval(values["HIDDEN"]) == 64
    assert ast.literal_eval(values["CASES"]) == [{"T": 1}]
    assert ast.unparse(values["KBOT"]) == "dict(name='norm')"  # never rewritten
    assert "torch.randn(T, 64), 7]" in points[0].source  # the other literal stays


def test_no_point_without_a_size_every_case_shares(tmp_path):
    source = NORM.replace("torch.randn(T, HIDDEN)", "torch.randn(T * 64)")
    points, why = sweep_points(_problem(tmp_path, source), tmp_path / "sweep")
    assert points == [] and "same in every case" in why


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """Both candidates swept by the real evaluator on the CPU, once for the module."""
    from kbot.evaluate import EvalOptions, Evaluator

    folder = tmp_path_factory.mktemp("sweep")
    problem = _problem(folder)
    points, _ = sweep_points(problem, folder / "sweep")
    out = {}
    with Evaluator(EvalOptions(device="cpu", seeds=5, sandbox="off", allow_unsandboxed=True)) as ev:
        for name, source in (("generic", GENERIC), ("pinned", PINNED)):
            out[name] = run_sweep(ev.evaluate_sweep, source, points)
    return problem, out


def test_the_evaluator_checks_the_kernel_at_each_size_with_the_ops_own_state(swept):
    _, reports = swept
    status = {n: [(p["to"], p["status"]) for p in r["points"]] for n, r in reports.items()}
    assert status["generic"] == [(64, "passed"), (80, "not applicable"), (256, "passed")]
    assert status["pinned"] == [(64, "passed"), (80, "not applicable"), (256, "failed")]
    failed = reports["pinned"]["points"][2]
    assert failed["reasons"][0].startswith(("[mismatch]", "[nan-inf]"))  # out-of-block columns
    assert "multiple of 64" in reports["generic"]["points"][1]["reasons"][0]
    passed = reports["generic"]["points"][2]
    assert passed["shapes"] == [[1, 256]] and passed["scalars"]["hidden"] == 256


def _guard(problem, report):
    facts = input_facts(problem.path, problem.cases, report)
    call = KernelCall("rms", ("x",), ("x",), (), ())
    return guard_terms(call, (Param("x", None),), ("float32",), True, "norm", facts)


def test_the_guard_frees_a_width_the_kernel_passed_at_every_size(swept):
    problem, reports = swept
    terms = _guard(problem, reports["generic"])
    # up to the largest checked, in steps the reference takes (it refused 80 wide)
    assert terms[-5:-3] == ["x.shape[1] <= 256", "x.shape[1] % 64 == 0"]
    assert terms[-3] == "x.shape[0] <= 5"  # the tokens: up to the largest case
    assert terms[-2:] == [
        "not (torch.is_grad_enabled() and x.requires_grad)",
        "torch.get_default_dtype() == torch.float32",
    ]
    assert not any("== (128,)" in t or "== 128" in t for t in terms)


def test_the_guard_keeps_a_width_it_failed_at_some_size_to_the_sizes_that_passed(swept):
    problem, reports = swept
    assert "x.shape[1] in (64, 128)" in _guard(problem, reports["pinned"])


def test_a_failed_point_of_unknown_shapes_frees_nothing(swept):
    problem, reports = swept
    points = [dict(p) for p in reports["generic"]["points"]]
    points[2] = {k: v for k, v in points[2].items() if k != "shapes"} | {"status": "failed"}
    assert "x.shape[1] in (64, 128)" in _guard(problem, {"points": points})


def test_an_attribute_the_sweep_changed_is_not_pinned_when_every_size_passed(swept):
    problem, reports = swept
    function = ast.parse("def forward(self, x):\n    return self.hidden * x * self.eps\n").body[0]
    scalars = (("hidden", 128), ("eps", 1e-06))
    generic = swept_scalars(reports["generic"], scalars)
    assert attribute_terms(function, scalars, (), None, generic) == ["self.eps == 1e-06"]
    pinned = swept_scalars(reports["pinned"], scalars)
    terms = attribute_terms(function, scalars, (), None, pinned)
    assert sorted(terms) == ["self.eps == 1e-06", "self.hidden in (64, 128)"]


def test_optimize_records_the_sweep_in_the_report_and_skips_it_when_turned_off(tmp_path, fakes):
    from kbot.search.progress import NullProgress

    class Notes(NullProgress):
        said: list[str] = []

        def note(self, text):
            self.said.append(text)

    problem = _problem(tmp_path)
    evaluator = fakes.FakeEvaluator()
    options = OptimizeOptions(device="cpu", budget=Budget(generations=1))
    result = optimize(
        problem, options, tmp_path / "work",
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [fakes.FakeProposer()],
        progress=Notes(),
    )  # fmt: skip
    assert "other models' sizes: 3 passed (report.md)" in Notes.said
    import json

    report = json.loads(result.report_json_path.read_text())
    assert [p["to"] for p in report["sweep"]["points"]] == [64, 80, 256]
    assert {p["status"] for p in report["sweep"]["points"]} == {"passed"}
    assert evaluator.swept == ["norm_128_to_64.py", "norm_128_to_80.py", "norm_128_to_256.py"]
    assert (result.run_dir / "sweep" / "norm_128_to_256.py").is_file()
    assert "| 128 | 256 | passed |" in result.report_md_path.read_text()

    off = OptimizeOptions(device="cpu", budget=Budget(generations=1), sweep_points=0)
    quiet = fakes.FakeEvaluator()
    result = optimize(
        problem, off, tmp_path / "work2",
        evaluator_factory=lambda *a: quiet,
        proposer_factory=lambda names: [fakes.FakeProposer()],
    )  # fmt: skip
    report = json.loads(result.report_json_path.read_text())
    assert report["sweep"]["note"].startswith("not swept: turned off") and quiet.swept == []


def test_a_search_cut_by_its_budget_still_sweeps_its_winner_on_a_fresh_evaluator(tmp_path, fakes):
    import json
    import time

    class OneSlow(fakes.FakeEvaluator):
        """The second candidate would take 60 s: the budget's end abandons it."""

        def sleep_for(self, source):
            return 60.0 if len(self.evaluated) == 2 else 0.05

    made = [OneSlow(), fakes.FakeEvaluator()]
    factory = iter(made)
    budget_s = 2.0
    started = time.monotonic()
    result = optimize(
        _problem(tmp_path), OptimizeOptions(device="cpu", budget=Budget(time_s=budget_s)),
        tmp_path / "work",
        evaluator_factory=lambda *a: next(factory),
        proposer_factory=lambda names: [fakes.FakeProposer()],
    )  # fmt: skip
    wall_s = time.monotonic() - started
    assert made[0].closed.is_set() and made[0].swept == []
    assert made[1].swept == ["norm_128_to_64.py", "norm_128_to_80.py", "norm_128_to_256.py"]
    report = json.loads(result.report_json_path.read_text())
    assert {p["status"] for p in report["sweep"]["points"]} == {"passed"}
    # the search and the sweep after it: the budget plus its grace (a tenth); the sweep's
    # preparation (child processes building inputs on the meta device) runs before the clock
    assert report["elapsed_s"] <= 1.2 * budget_s + 0.5, report["elapsed_s"]
    assert wall_s <= 1.2 * budget_s + 0.5 + 30, wall_s


def test_a_short_budget_still_leaves_the_sweep_time_to_check_every_point(tmp_path, fakes):
    """A 2 s budget's tenth would not fit three 0.5 s checks: the grace has a floor
    (SWEEP_GRACE_MIN_S), so every point is checked and the guard is not pinned for want of
    time."""
    import time

    class SlowSweep(fakes.FakeEvaluator):
        def evaluate_sweep(self, problem, source, name="candidate.py", upcoming=0):
            time.sleep(0.5)
            return super().evaluate_sweep(problem, source, name, upcoming)

    report = _sweep_report(tmp_path, fakes, SlowSweep(sleep_s=0.05), budget_s=2.0)
    assert [p["status"] for p in report["sweep"]["points"]] == ["passed"] * 3, report["sweep"]


def test_a_sweep_cut_short_admits_the_sizes_it_checked_and_not_the_ranges_between(swept):
    problem, reports = swept
    partial = {**reports["generic"], "partial": True, "note": "3 of 5 points checked"}
    terms = _guard(problem, partial)
    assert "x.shape[1] in (64, 128, 256)" in terms
    assert not any("<=" in t and "shape[1]" in t for t in terms)  # widths: no range


def test_a_sweep_stopped_by_its_grace_keeps_the_points_it_checked(tmp_path, fakes, monkeypatch):
    """The grace ends after the first point: that point stands in the report, marked partial,
    instead of the whole sweep being dropped and the guard pinned to the run's own sizes."""

    from kbot.search import final

    monkeypatch.setattr(final, "SWEEP_GRACE_MIN_S", 0.7)

    class SlowSweep(fakes.FakeEvaluator):
        def evaluate_sweep(self, problem, source, name="candidate.py", upcoming=0):
            if self.closed.wait(0.5):
                raise RuntimeError("closed")
            return super().evaluate_sweep(problem, source, name, upcoming)

    sweep = _sweep_report(tmp_path, fakes, SlowSweep(sleep_s=0.05), budget_s=1.0)["sweep"]
    assert sweep["partial"] is True and sweep["note"].endswith("checked before its time ran out")
    assert [p["status"] for p in sweep["points"]] == ["passed"]


def _sweep_report(tmp_path, fakes, evaluator, budget_s: float) -> dict:
    """report.json of an optimize run with the fake proposer, `evaluator` and `budget_s`."""
    import json

    result = optimize(
        _problem(tmp_path), OptimizeOptions(device="cpu", budget=Budget(time_s=budget_s)),
        tmp_path / "work",
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [fakes.FakeProposer()],
    )  # fmt: skip
    return json.loads(result.report_json_path.read_text())


def test_rows_split_in_two_leading_dims_are_checked_and_then_admitted(tmp_path):
    """gpt-fast calls its norms on [batch, seqlen, hidden]: the sweep's rows point splits the
    token inputs' rows ([4, 128] -> [2, 2, 128]); codegen's kernel passes it (its launcher
    flattens leading dims), a hand-written one that reads x.shape[0] as the rows fails it, and
    the guard admits one more leading dim only after a pass."""
    from kbot.evaluate import EvalOptions, Evaluator
    from kbot.propose.codegen import generate

    source = NORM.replace("CASES = [dict(T=1), dict(T=5)]", "CASES = [dict(T=1), dict(T=4)]")
    problem = _problem(tmp_path, source)
    points, why = sweep_points(problem, tmp_path / "sweep")
    rows = [p for p in points if p.kind == "rows"]
    assert why == "" and [p.label for p in rows] == ["rows 4->2x2"]
    assert rows[0].facts["shapes"][0] == [[2, 2, 128]]
    codegen = generate(problem)[0].source
    options = EvalOptions(device="cpu", seeds=5, sandbox="off", allow_unsandboxed=True)
    with Evaluator(options) as ev:
        reports = {
            name: run_sweep(ev.evaluate_sweep, candidate, rows)
            for name, candidate in (("codegen", codegen), ("hand", GENERIC))
        }
    assert reports["codegen"]["points"][0]["status"] == "passed"
    assert reports["hand"]["points"][0]["status"] == "failed"
    admitted = _guard(problem, reports["codegen"])
    assert "x.dim() in (2, 3)" in admitted and "x.shape[-1:] == (128,)" in admitted
    kept = _guard(problem, reports["hand"])
    assert "x.dim() in (2, 3)" not in kept and "x.shape[1:] == (128,)" in kept


def test_no_rows_point_without_an_even_row_count_or_a_token_input_of_rank_two(tmp_path):
    odd = sweep_points(_problem(tmp_path), tmp_path / "odd")[0]  # T = 1 and 5
    assert not [p for p in odd if p.kind == "rows"]
    vector = NORM.replace("CASES = [dict(T=1), dict(T=5)]", "CASES = [dict(T=2), dict(T=4)]")
    vector = vector.replace("torch.randn(T, HIDDEN)", "torch.randn(T * HIDDEN)")
    points = sweep_points(_problem(tmp_path, vector), tmp_path / "vector")[0]
    assert not [p for p in points if p.kind == "rows"]
