"""The tiled schedule for reductions over a middle dim (emit_tiled.py): one outer index x a block
of contiguous inner elements per program, the reduced dim walked down the tile. Its variants
lead for moe_sum, and every one is accepted by the real evaluator on the CPU interpreter:
several outer and inner dims, a per-inner-position weight, bf16 keepdim mean, a softmax whose
reduced extent needs the looped form, and a non-contiguous input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.problem.runtime import import_file
from kbot.propose.codegen import generate

HERE = Path(__file__).parent
TILED_PROBLEMS = sorted((HERE / "problems_tiled").glob("*.py"))
TRANSPOSED = HERE / "problems_tiled" / "tiled_transposed_input.py"
EVALUATED = TILED_PROBLEMS
MOE_SUM = HERE.parents[1] / "bench" / "problems" / "moe_sum.py"


def _tiled(candidates):
    return [c for c in candidates if str(c.params.get("loop", "")).startswith("tiled")]


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalOptions(device="cpu")) as ev:
        yield ev


def test_tiled_variants_lead_for_moe_sum_and_the_row_schedule_stays():
    candidates = generate(load_problem(MOE_SUM))
    loops = [c.params["loop"] for c in candidates]
    # The search seeds from the first four proposals (2 islands x 2): tiled ones must be there.
    assert loops[:2] == ["tiled_one_pass", "tiled_one_pass"]
    assert "one_pass" in loops[:4]
    first = candidates[0]
    assert first.params["block_inner"] == 1024 and first.params["num_warps"] == 4
    assert "BLOCK_INNER = 1024" in first.source and "NUM_WARPS = 4" in first.source
    kernel = first.source.split("def moe_sum(")[0]
    assert "//" not in kernel and "%" not in kernel, "no per-element index division"
    assert "axis=0" in kernel


def test_moe_sum_tiled_variants_are_correct_at_decode_sizes(tmp_path, compare):
    small = tmp_path / "moe_sum.py"
    text = MOE_SUM.read_text()
    small.write_text(re.sub(r"(?m)^CASES = .*$", "CASES = [dict(T=1), dict(T=3)]", text))
    tiled = _tiled(generate(load_problem(small)))
    assert len(tiled) == 4  # three tilings and the first with a decode launch of its own
    assert sum("up to 64 rows" in c.note for c in tiled) == 1
    for candidate in tiled:
        assert compare(small, candidate.source) == 4, candidate.note  # 2 seeds x 2 cases


@pytest.mark.parametrize("problem", EVALUATED, ids=lambda p: p.stem)
def test_every_tiled_variant_is_accepted_by_the_evaluator(problem, evaluator):
    spec = load_problem(problem)
    tiled = _tiled(generate(spec))
    assert tiled, "a middle-dim reduction should get tiled variants"
    for candidate in tiled:
        verdict = evaluator.evaluate(spec, candidate.source)
        assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])


def test_tiled_variants_read_a_transposed_input_through_its_strides(compare):
    tiled = _tiled(generate(load_problem(TRANSPOSED)))
    assert tiled
    for candidate in tiled:
        assert compare(TRANSPOSED, candidate.source) == 4, candidate.note


def test_long_reduced_extent_loops_over_it():
    candidates = _tiled(
        generate(load_problem(HERE / "problems_tiled" / "tiled_softmax_long_middle.py"))
    )
    assert {c.params["loop"] for c in candidates} == {"tiled_looped"}
    source = candidates[0].source
    assert "BLOCK_RED = 8" in source
    # max, then sum of exp(x - max), then the full-shaped output: three passes over the slab
    assert source.count("for red_start in range(0, n_red, BLOCK_RED):") == 3


@pytest.mark.parametrize(
    ("problem", "inputs"),
    [
        # a reduced extent and inner sizes the trace never saw (inner 7 x 10: not a block multiple)
        ("tiled_sum_5d", lambda: [torch.randn(2, 2, 9, 7, 10)]),
        # the looped kernel traced with 80 reduced rows, run with 3 (under one step) and 130
        ("tiled_softmax_long_middle", lambda: [torch.randn(2, 3, 50)]),
        ("tiled_softmax_long_middle", lambda: [torch.randn(1, 130, 33)]),
    ],
)
def test_tiled_variants_are_correct_on_unseen_shapes(problem, inputs, load_candidate, device):
    path = HERE / "problems_tiled" / f"{problem}.py"
    reference = import_file(path)
    torch.manual_seed(0)
    args = [a.to(device) for a in inputs()]
    with torch.no_grad():
        expected = reference.Model().to(device)(*args)
    tiled = _tiled(generate(load_problem(path)))
    assert tiled
    for candidate in tiled:
        module = load_candidate(candidate.source)
        with torch.no_grad():
            got = module.ModelNew().to(device)(*args)
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
