"""Codegen for the KernelBench families it lacked (issue 17), on problems of our own in
KernelBench's format (tests/codegen/problems_kb/, no CASES, no KBOT): reductions over several
dims (LayerNorm over (C, H, W), GroupNorm, InstanceNorm), full reductions (Frobenius norm, a
0-dim mean), a reduction over one middle dim of a 4-D tensor (RMS over channels), a keepdim
sum over a middle dim, an L1 row norm and an fp32 GEMM + epilogue. The first candidate of
each is accepted by the real evaluator on the CPU interpreter; every variant matches eager."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate

PROBLEMS = sorted((Path(__file__).parent / "problems_kb").glob("*.py"))


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalOptions(device="cpu")) as ev:
        yield ev


def test_every_family_problem_is_here():
    names = {p.stem for p in PROBLEMS}
    assert {"layernorm_chw", "group_norm", "instance_norm", "frobenius_norm", "mean_all"} <= names


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_first_candidate_is_accepted_by_the_evaluator(path, evaluator):
    spec = load_problem(path)
    first = generate(spec, limit=1)[0]
    verdict = evaluator.evaluate(spec, first.source)
    assert verdict.accepted, (first.note, [str(r) for r in verdict.reasons])


@pytest.mark.parametrize(
    "name", ["layernorm_chw", "group_norm", "instance_norm", "frobenius_norm", "mean_all"]
)
def test_every_variant_of_a_several_dim_reduction_matches_eager(name, compare):
    path = Path(__file__).parent / "problems_kb" / f"{name}.py"
    candidates = generate(load_problem(path))
    assert candidates
    for candidate in candidates:
        assert candidate.params["schedule"] == "row_reduction"
        assert compare(path, candidate.source) == 2, candidate.note


def test_a_full_reduction_stores_one_value_and_divides_by_every_element():
    source = generate(load_problem(Path(__file__).parent / "problems_kb" / "mean_all.py"))[0].source
    assert "n_rows = 1" in source and "rows * 0" in source
    assert "/ n_cols" in source


def test_layernorm_over_three_dims_splits_the_column_id_per_dim():
    path = Path(__file__).parent / "problems_kb" / "layernorm_chw.py"
    source = generate(load_problem(path))[0].source
    # the traced launcher (the public one over it takes more leading dims: leading_rows.py)
    launcher = source.split("def _layernorm_chw_rows(")[1]
    assert "n_cols = " in launcher and " * " in launcher.split("n_cols = ")[1].splitlines()[0]
