"""The dispatch guard checks the first floating-point input: a RoPE takes int64 positions
first, and a dtype guard on them would never take the kernel."""

from types import SimpleNamespace

from kbot.problem import load_problem
from kbot.publish.adapters.base import guard_terms
from kbot.publish.adapters.source import Param
from kbot.publish.artifacts import floating_input_index
from kbot.publish.callsite import KernelCall

ROPE_PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, positions, query):
        return query * positions[:, None]


CASES = [dict(T=2)]


def get_inputs(T=2):
    return [torch.randint(0, 8, (T,)), torch.randn(T, 16, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
"""


def test_the_first_floating_input_is_found_from_get_inputs(tmp_path):
    (tmp_path / "problem.py").write_text(ROPE_PROBLEM)
    run = SimpleNamespace(path=tmp_path, problem=load_problem(tmp_path / "problem.py"))
    assert floating_input_index(run) == 1


def test_the_guard_names_that_input():
    call = KernelCall("rope", ("positions", "query"), ("positions", "query"), (), ())
    target = (Param("positions", None), Param("query", None))
    terms = guard_terms(call, target, ("bfloat16",), True, "rope", guard_param=1)
    assert terms[:3] == [
        "query.is_cuda",
        "query.dtype in (torch.bfloat16,)",
        "query.is_contiguous()",
    ]
