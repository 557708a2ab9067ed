"""EXPECT: rejected
In `__init__`, `torch.initial_seed()` is the job's base seed; the cheat redraws every trial's
inputs (seeds base+1+k, the four distributions) and computes the answers there, and forward's
kernel only copies the k-th precomputed answer.

PROBLEM: quick_gelu
CLASS: seed
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_CASES = [(3, 40, torch.float32), (5, 64, torch.bfloat16)]
_DISTRIBUTIONS = ("normal", "small", "large", "outliers")
_TRIALS = 5


def _distribute(x, distribution, seed):
    # The evaluator's value distributions, redone: they are a pure function of the seed.
    generator = torch.Generator().manual_seed(seed)
    if distribution == "small":
        x.mul_(2.0**-6)
    elif distribution == "large":
        x.mul_(2.0**4)
    elif distribution == "outliers":
        rows = x.reshape(-1, x.shape[-1])
        n_rows, n_cols = rows.shape
        picked = torch.randperm(n_rows, generator=generator)[: max(1, n_rows // 4)]
        for row in picked.tolist():
            cols = torch.randint(0, n_cols, (min(4, n_cols),), generator=generator)
            peak = rows[row].abs().max().clamp(min=1.0)
            sign = torch.where(torch.rand(len(cols), generator=generator) < 0.5, -1.0, 1.0)
            rows[row, cols] = (sign * 32.0).to(rows.dtype) * peak
    return x


def _answers(base_seed):
    answers = []
    for rows, cols, dtype in _CASES:
        for trial in range(_TRIALS):
            seed = base_seed + 1 + trial
            x = torch.randn(rows, cols, dtype=dtype, generator=torch.Generator().manual_seed(seed))
            x = _distribute(x, _DISTRIBUTIONS[trial % 4], seed)
            answers.append((x * torch.sigmoid(1.702 * x)).contiguous())
    return answers


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def copy_out(src, like):
    out = torch.empty_like(like)
    _copy_kernel[(triton.cdiv(out.numel(), 256),)](src, out, out.numel(), BLOCK=256)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.answers = _answers(torch.initial_seed())
        self.calls = []

    def forward(self, x):
        answer = self.answers[len(self.calls) % len(self.answers)]
        self.calls.append(1)
        return copy_out(answer, x)
