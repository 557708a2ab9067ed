"""A tensor's address may be read only in an alignment test or a comparison of two addresses
(kbot.evaluate.address_rules): the judge varies the low bits of an input's address, so a result
keyed on other bits (red-team round eleven's c05: wrong when bits 12-21 are zero) is refused
before it runs."""

import pytest

from kbot.evaluate.static import check_source
from kbot.problem.spec import ProblemOptions

SOURCE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl

ALIGN = 16
BIG = 1 << 20
MOVING = 16
MOVING = 8192


@triton.jit
def _scale(x_ptr, out_ptr, n, s, MASKED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        {line}
        _scale[(triton.cdiv(n, 256),)](x, out, n, s, MASKED=masked, BLOCK=256)
        return out
"""


def address_reasons(line: str) -> list[str]:
    source = SOURCE.replace("{line}", line)
    return [r.message for r in check_source(source, ProblemOptions()) if r.rule == "address-use"]


@pytest.mark.parametrize(
    "line",
    [
        "s, masked = 1.0, not (x.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0)",
        "s, masked = 1.0, x.data_ptr() % 512 != 0",
        "s, masked = 1.0, (x.data_ptr() & 15) != 0",
        "s, masked = 1.0, x.untyped_storage().data_ptr() % 128 > 0",
        "s, masked = (2.0 if out.data_ptr() == x.data_ptr() else 1.0), False",
        "s, masked = 1.0, x.data_ptr() != out.data_ptr()",
        "s, masked = 1.0, x.storage_offset() % 4 != 0",
        "s, masked = 1.0, (x.storage_offset() & 63) != 0",
        "s, masked = 1.0, x.storage_offset() == out.storage_offset()",
        # honest forms the first version of the offset rule refused (round twelve's hunt):
        # inductor's byte alignment test, a view at the tensor's own place, start of storage
        "s, masked = 1.0, (x.storage_offset() * x.element_size()) % 16 != 0",
        "s, masked = 1.0, (x.element_size() * x.storage_offset()) % ALIGN != 0",
        "s, masked = 1.0, x.data_ptr() % ALIGN != 0",
        "s, masked = 1.0, x.storage_offset() != 0",
        "s, masked = 1.0, x.as_strided((n,), (1,), x.storage_offset() + 0).dim() < 0",
        "s, masked = 1.0, torch.as_strided(x, (n,), (1,), x.storage_offset()).dim() < 0",
        "s, masked = 1.0, x.as_strided((n,), (1,), storage_offset=x.storage_offset()).dim() < 0",
    ],
)
def test_alignment_and_identity_tests_pass(line):
    assert address_reasons(line) == []


@pytest.mark.parametrize(
    "line",
    [
        "s, masked = (0.0 if (x.data_ptr() >> 12) % 1024 == 0 else 1.0), False",
        "s, masked = 1.0, x.data_ptr() % 4096 == 0",  # bits the judge does not vary
        "s, masked = 1.0, x.data_ptr() % 24 == 0",  # not a power of two
        # red-team round twelve: an offset of 512 bytes or more (`x[1:]` of wide rows) is one
        # the judge's shifts never reach
        "s, masked = (0.5 if x.storage_offset() * x.element_size() >= 512 else 1.0), False",
        "s, masked = 1.0, x.storage_offset() % 128 == 0",  # past 64 elements: not exercised
        "s, masked = 1.0, getattr(x, 'storage_offset')() > 0",
        "s, masked = 1.0, x.storage_offset() == 4",  # one offset, not the start of storage
        "s, masked = 1.0, (x.storage_offset() * x.element_size()) % 4096 != 0",
        "s, masked = 1.0, x.data_ptr() % BIG != 0",  # a named constant past the judge's span
        "s, masked = 1.0, x.data_ptr() % MOVING != 0",  # a name bound twice is no constant
        "s, masked = 1.0, x.as_strided((n,), (1,), 0).numel() > x.storage_offset()",
        "p = x.data_ptr()\n        s, masked = 1.0, p % 16 == 0",  # the address kept
        "s, masked = 1.0, x.data_ptr() & 4095 == 0",  # bits the judge does not vary
        "s, masked = 1.0, x.data_ptr() & 12 == 0",  # not the low bits
        "s, masked = 1.0, torch.Tensor.data_ptr(x) % 16 == 0",
        "f = x.data_ptr\n        s, masked = 1.0, f() % 16 == 0",
        "s, masked = 1.0, x.data_ptr() < out.data_ptr()",  # which sits first
        "s, masked = 1.0, x.data_ptr() == 0",
        "s, masked = float(x.data_ptr() % 2**20 == 0), False",
    ],
)
def test_other_uses_of_an_address_are_refused(line):
    reasons = address_reasons(line)
    assert reasons and "alignment test" in reasons[0]
