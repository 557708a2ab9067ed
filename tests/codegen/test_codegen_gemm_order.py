"""Which matmul schedule codegen offers first: the Triton GEMM where an extern call would have
nothing to fuse (its kernel a copy of the result, one more pass over the output than the
reference), the extern call + fused epilogue where there is one; and GEMM tiles no deeper than
K. That every variant is accepted by the evaluator is test_codegen_candidates.py's job."""

from pathlib import Path

import torch

from kbot.problem import load_problem
from kbot.problem.runtime import import_file
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"


def _candidates(name: str):
    return generate(load_problem(PROBLEMS / f"{name}.py"))


def test_a_bare_matmul_gets_the_triton_gemm_first_and_the_extern_call_after():
    notes = [c.note for c in _candidates("matmul_small_k_extern")]
    assert "gemm" in notes[0] and "extern" not in notes[0], notes
    assert any("extern" in note for note in notes[1:]), notes


def test_a_matmul_with_an_epilogue_keeps_the_extern_call_first():
    notes = [c.note for c in _candidates("matmul_linear_silu_extern")]
    assert "extern" in notes[0], notes
    assert any("gemm" in note and "extern" not in note for note in notes), notes


def test_gemm_tiles_are_no_deeper_than_k():
    sources = [c.source for c in _candidates("matmul_small_k_extern") if "tl.dot" in c.source]
    assert sources
    for source in sources:
        assert "BLOCK_K = 32" in source, source[:2000]


def test_the_first_gemm_matches_the_reference_on_the_cpu(tmp_path):
    path = PROBLEMS / "matmul_small_k_extern.py"
    kernel_file = tmp_path / "gemm_kernel.py"
    kernel_file.write_text(_candidates("matmul_small_k_extern")[0].source, encoding="utf-8")
    module, kernel = import_file(path), import_file(kernel_file)
    torch.manual_seed(0)
    a, b = torch.rand(37, 32), torch.rand(32, 45)
    expected = module.Model()(a, b)
    torch.testing.assert_close(kernel.ModelNew()(a, b), expected, atol=1e-5, rtol=1e-5)
