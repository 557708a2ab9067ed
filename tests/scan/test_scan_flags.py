"""The reference's semantics read from its AST: what is a write into an input and what is a
write into the op's own temporary."""

from __future__ import annotations

import ast
import textwrap

import pytest

from kbot.scan.findings import Flag
from kbot.scan.flags import analyse_flags


def _flags(body: str) -> set[Flag]:
    source = "def op(x, residual, weight):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    func = ast.parse(source).body[0]
    return {note.flag for note in analyse_flags(func)}


@pytest.mark.parametrize(
    "body",
    [
        "x = x.float()\nx.mul_(2.0)\nreturn x.to(torch.bfloat16)\n",
        "x = x.float().add_(residual.float())\nreturn x * weight\n",
        "in_dtype = x.dtype\nx = x.to(torch.float32)\nx.mul_(weight)\nreturn x.to(in_dtype).mul_(weight)\n",
        "y = x.half()\ny += 1\nreturn y * 2\n",
    ],
    ids=["float-mul_", "float-add_", "to-mul_", "half-iadd"],
)
def test_writes_into_an_upcast_copy_are_not_input_mutations(body):
    assert Flag.IN_PLACE not in _flags(body)


@pytest.mark.parametrize(
    "body",
    [
        "x.mul_(2.0)\nreturn x\n",
        "v = x.view(-1)\nv.mul_(2.0)\nreturn v * 2\n",
        "c = x.contiguous()\nc.add_(residual)\nreturn c * 2\n",
        "a, b = x.chunk(2, -1)\na.mul_(b)\nreturn a * 2\n",
        "x[0] = 0\nreturn x * 2\n",
    ],
    ids=["direct", "view", "contiguous", "chunk", "setitem"],
)
def test_writes_into_inputs_and_their_views_are_mutations(body):
    assert Flag.IN_PLACE in _flags(body)


def test_a_returned_conversion_may_be_the_input_itself():
    assert Flag.RETURNS_VIEW in _flags("return x.float()\n")
    assert Flag.RETURNS_VIEW not in _flags("x = x.float()\nreturn x * 2\n")
