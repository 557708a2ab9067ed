"""The pairs schedule (codegen/emit_pairs.py): an output that is a cat of equal pieces along the
last dim gets variants that compute every piece at one index and store each at its offset, with
no `tl.where` choosing between the pieces; other cats keep only the pointwise variants. The
evaluator checks every variant of these problems (test_codegen_candidates.py); here the
pairs kernels are run against the reference and against the pointwise kernel's exact bits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kbot.problem import load_problem
from kbot.problem.runtime import case_inputs, import_file, init_inputs
from kbot.propose.codegen import generate
from kbot.propose.codegen.classify import classify
from kbot.propose.codegen.emit_pairs import cat_of_pieces
from kbot.propose.codegen.trace import Unsupported, trace_problem

PROBLEMS = Path(__file__).parent / "problems"
BENCH = Path(__file__).parents[2] / "bench" / "problems"
PAIRS = [
    "cat_pairs_rope_4d",
    "cat_pairs_product_and_sum",
    "rope_neox_positions",
    "stack_pairs_rope_interleaved",
    "rope_rotate_half",
]
REFUSED = {
    "cat_unequal_pieces": "pieces are not of one width",
    "cat_rows_dim0": "joins dim 0 of 2, not the last",
    "gated_silu_chunk": "is not a cat",
}


def _label(candidate) -> str:
    return candidate.note.split(": ", 1)[1]


def _pairs_candidates(path: Path):
    """The pairs candidates, the one-launch variant before its decode composite (which comes
    first in codegen's order where the problem has cases of several sizes)."""
    pairs = [c for c in generate(load_problem(path)) if _label(c).startswith("pairs")]
    return sorted(pairs, key=lambda c: " up to " in _label(c))


def _kernels(source: str) -> list[str]:
    """The candidate's `_<op>_kernel` functions, signature and body."""
    parts = [part.split("\n\n\n")[0] for part in source.split("@triton.jit\n")[1:]]
    return [part for part in parts if re.match(r"def _\w+_kernel\(", part)]


@pytest.mark.parametrize("name", PAIRS)
def test_pairs_variants_come_first_and_match_the_reference(name, compare):
    candidates = generate(load_problem(PROBLEMS / f"{name}.py"))
    labels = [c.note.split(": ", 1)[1] for c in candidates]
    assert labels[0].startswith("pairs") and labels[1].startswith("pairs")
    # the problems have decode and prefill cases: the decode launch first
    assert "up to 64 rows, else pairs" in labels[0]
    assert labels[2].startswith("pointwise")  # right behind, where a budget reaches it
    for candidate in candidates[:2]:
        for kernel in _kernels(candidate.source):
            # Each piece stored once at its own columns; no select between the pieces.
            assert kernel.count("tl.store(") == 2
            assert not [w for w in re.findall(r"tl\.where\(([^,]*),", kernel) if "cols" in w]
        assert compare(PROBLEMS / f"{name}.py", candidate.source) > 0


def test_rope_pairs_kernel_loads_each_input_once_and_cos_sin_once_per_token():
    source = _pairs_candidates(PROBLEMS / "cat_pairs_rope_4d.py")[0].source
    (kernel,) = _kernels(source)
    loads = re.findall(r"= tl\.load\((\w+)_ptr[^\n]*", kernel)
    assert sorted(loads) == ["cos_cache", "positions", "sin_cache", "x", "x"]
    for line in kernel.splitlines():
        if "_cache_ptr" in line:  # [rows, 1, cols]: broadcast over the heads, not re-gathered
            assert "mid_mask" not in line and "mids" not in line
    # The products the differences consume are rounded as the reference rounds them.
    assert kernel.count("_round_product_to_bf16(") == 4
    assert kernel.count("_round_to_bf16(") == 4  # cos, sin, and the two pieces


@pytest.mark.parametrize(
    "name",
    [
        "cat_pairs_rope_4d",
        "cat_pairs_product_and_sum",
        "stack_pairs_rope_interleaved",
        "rope_rotate_half",
    ],
)
def test_pairs_kernel_gives_the_pointwise_kernels_bits(name, load_candidate, device):
    """Same lowering, same roundings: on the interpreter the outputs are bit-identical (on a
    GPU the compiler may contract a product and a sum differently in the two kernels)."""
    path = PROBLEMS / f"{name}.py"
    spec = load_problem(path)
    reference = import_file(path)
    candidates = generate(spec)
    pointwise = next(c for c in candidates if _label(c).startswith("pointwise"))
    pairs = _pairs_candidates(path)[0]
    models = [
        load_candidate(c.source).ModelNew(*init_inputs(reference)).to(device)
        for c in (pointwise, pairs)
    ]
    state = reference.Model(*init_inputs(reference)).state_dict()
    for model in models:
        model.load_state_dict(state)
    for case in spec.cases:
        torch.manual_seed(3)
        inputs = [x.to(device) if torch.is_tensor(x) else x for x in case_inputs(reference, case)]
        with torch.no_grad():
            expected, got = (model(*inputs) for model in models)
        if device == "cpu":
            assert torch.equal(got, expected)
        else:
            torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_other_cats_are_refused_and_keep_the_pointwise_variants(name):
    spec = load_problem(PROBLEMS / f"{name}.py")
    traced = trace_problem(spec)
    (schedule,) = classify(traced)
    with pytest.raises(Unsupported, match=REFUSED[name]):
        cat_of_pieces(traced, schedule)
    labels = [c.note.split(": ", 1)[1] for c in generate(spec)]
    assert labels and not any(label.startswith("pairs") for label in labels)


@pytest.mark.parametrize("name", ["rope_gqa_two_outputs", "rope_gqa_two_outputs_fp32"])
def test_outputs_of_two_shapes_get_a_pairs_kernel_each(name, compare):
    (candidate,) = _pairs_candidates(PROBLEMS / f"{name}.py")
    kernels = _kernels(candidate.source)
    assert [k.split("(")[0] for k in kernels] == [
        f"def _{name}_out0_kernel",
        f"def _{name}_out1_kernel",
    ]
    assert all(k.count("tl.store(") == 2 and "cols % " not in k for k in kernels)
    assert compare(PROBLEMS / f"{name}.py", candidate.source) > 0


def test_bench_rope_tiles_a_token_by_all_its_heads():
    (prefill, composite) = _pairs_candidates(BENCH / "rope_neox.py")
    assert prefill.params == {
        "schedule": "pointwise",
        "pairs": 2,
        "rows_per_program": 1,
        "block_m": 32,  # 32 heads
        "block_n": 64,  # half of a 128 head
        "num_warps": 8,
    }
    assert composite.params["decode"]["block_m"] == 8


def test_a_pair_dim_whose_size_name_hides_its_1_is_squeezed(compare):
    # text-generation-inference's Llama-4 rotary: reshape(..., -1, 2) then unbind(-1); the
    # squeeze once raised a bare StopIteration out of codegen (an empty error message)
    path = PROBLEMS / "rope_pairs_split_table.py"
    candidates = generate(load_problem(path))
    assert candidates
    assert compare(path, candidates[0].source) > 0


def test_rotate_half_pairs_kernel_serves_an_odd_head_dim(load_candidate, device):
    """Traced at head_dim 24, where the halves are equal, and run at 25 (the evaluator's sweep
    tries odd sizes): the halves are 13 and 12 columns, and every column is computed once, by
    the piece it lies in (a second piece as wide as the first would write past the row)."""
    path = PROBLEMS / "rope_rotate_half.py"
    reference = import_file(path)
    candidates = _pairs_candidates(path)
    for candidate in candidates:
        model = load_candidate(candidate.source).ModelNew().to(device)
        for tokens in (1, 70):  # the decode launch and the prefill one
            torch.manual_seed(5)
            x = torch.randn(tokens, 3, 25, dtype=torch.bfloat16, device=device)
            cos, sin = torch.randn(2, tokens, 1, 25, device=device)
            with torch.no_grad():
                got = model(x, cos, sin)
                expected = reference.Model()(x, cos, sin)
            torch.testing.assert_close(got, expected, atol=1e-2, rtol=1.6e-2)
    assert "n_half = max(" in candidates[0].source
