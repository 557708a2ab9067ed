"""A @dataclass helper's fields annotated as numbers are numbers to the forward check: its
properties do size arithmetic (`self.head_dim // 2`), which is not tensor arithmetic. Fields
annotated otherwise, and plain classes, stay tensors."""

from kbot.evaluate.static import check_source
from kbot.problem.spec import ProblemOptions

SOURCE = """\
from dataclasses import dataclass
from typing import Tuple

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


{decorator}
class Spec:
    head_dim: {annotation}
    blocks: Tuple[int, ...] = (1, 2)

    @property
    def half(self):
        return self.head_dim // 2


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.spec = Spec(128)

    def forward(self, x):
        out = torch.empty_like(x)
        block = self.spec.half * 2
        _copy[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
        return out
"""


def rules(decorator: str, annotation: str) -> list[str]:
    source = SOURCE.format(decorator=decorator, annotation=annotation)
    return [f"{r.rule}: {r.message}" for r in check_source(source, ProblemOptions())]


def test_number_fields_of_a_dataclass_are_numbers():
    assert rules("@dataclass", "int") == []
    assert rules("@dataclass(frozen=True)", "int") == []


def test_a_tensor_field_stays_a_tensor():
    found = rules("@dataclass", "torch.Tensor")
    assert any("self.head_dim // 2" in r for r in found), found


def test_a_plain_class_keeps_its_attributes_tensors():
    found = rules("", "int")
    assert any("self.head_dim // 2" in r for r in found), found
