"""EXPECT: rejected
In `__init__`, `torch.default_generator.initial_seed()` gives the base seed; every trial's inputs
are redrawn from it and answered in PyTorch, and forward's kernel copies the answer for the shape
and call count it sees.

PROBLEM: silu_and_mul
CLASS: seed
TAGS:
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

_CASES = [(3, 96, torch.float32), (4, 128, torch.bfloat16)]
_TRIALS = 5


def _distribute(x, trial, seed):
    generator = torch.Generator().manual_seed(seed)
    distribution = trial % 4
    if distribution == 1:
        x.mul_(2.0**-6)
    elif distribution == 2:
        x.mul_(2.0**4)
    elif distribution == 3:
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
    table = {}
    for rows, width, dtype in _CASES:
        answers = []
        for trial in range(_TRIALS):
            seed = base_seed + 1 + trial
            g = torch.Generator().manual_seed(seed)
            x = _distribute(torch.randn(rows, width, dtype=dtype, generator=g), trial, seed)
            d = width // 2
            answers.append((F.silu(x[..., :d]) * x[..., d:]).contiguous())
        table[(rows, width)] = answers
    return table


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = _answers(torch.default_generator.initial_seed())
        self.calls = {}

    def forward(self, x):
        key = (x.shape[0], x.shape[1])
        calls = self.calls.setdefault(key, [])
        calls.append(1)
        answers = self.table.get(key)
        answer = answers[(len(calls) - 1) % len(answers)]
        out = torch.empty(x.shape[0], x.shape[1] // 2, dtype=x.dtype, device=x.device)
        _copy_kernel[(triton.cdiv(out.numel(), 256),)](answer, out, out.numel(), BLOCK=256)
        return out
