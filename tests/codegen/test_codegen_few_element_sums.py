"""A sum over an axis of a few elements whose size the source fixes (the pair axis of a 2 x 2
rotation) is traced as the pointwise sum of its elements (kbot.propose.codegen.few_sums):
lingua's RoPE sums q and k of different head counts so, which as two reductions of different
shapes had no schedule. A sum over a size the problem varies stays a reduction."""

from __future__ import annotations

from pathlib import Path

from kbot.problem import load_problem
from kbot.propose.codegen import generate
from kbot.propose.codegen.trace import trace_problem

PROBLEMS = Path(__file__).parent / "problems"


def _sums(path: Path) -> list[str]:
    traced = trace_problem(load_problem(path))
    return [str(n.target) for n in traced.graph.nodes if "sum" in str(n.target)]


def test_rotation_matrices_are_pointwise_and_every_variant_matches_eager(compare):
    path = PROBLEMS / "rope_rotation_matrices.py"
    assert _sums(path) == []
    candidates = generate(load_problem(path))
    assert candidates
    for candidate in candidates:
        assert candidate.params["schedule"] == "pointwise", candidate.note
        assert compare(path, candidate.source) == 8, candidate.note  # 2 seeds x 2 cases x q, k


def test_a_sum_over_a_size_of_the_inputs_stays_a_reduction(tmp_path):
    """Two columns here, but the width is the input's (another model's may differ): only a size
    the source fixes, one that keeps its value when every size doubles, is summed element by
    element."""
    path = tmp_path / "pair_sum.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x.sum(-1)\n\n\n"
        "CASES = [dict(T=1), dict(T=5)]\n\n\n"
        "def get_inputs(T):\n    return [torch.randn(T, 2)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    assert _sums(path) == ["aten.sum.dim_IntList"]
