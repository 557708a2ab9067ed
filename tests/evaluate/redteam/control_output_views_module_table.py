"""EXPECT: rejected
Returns views of cos/sin tables precomputed in __init__ (`self.cos_cache[:T]`, contiguous,
right values) for T up to 4096, and launches its kernel only past that. The outputs share memory
with the module's persistent buffers where the reference returns tensors of its own; the judge
refuses an output aliasing an input, never one aliasing ModelNew's state, and never writes to
an output. A caller that scales the tables in place (`cos.mul_(attention_scaling)`, YaRN/
dynamic-NTK style) corrupts the cache: every later call returns the scaled tables again.

PROBLEM: rope_table
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_POS = 4096


@triton.jit
def _rope_tab(f_ptr, cos_ptr, sin_ptr, start, T, HALF: tl.constexpr):
    row = start + tl.program_id(0)
    cols = tl.arange(0, HALF)
    f = tl.load(f_ptr + cols)
    a = row.to(tl.float32) * f
    m = (row + cols * 0) < T
    base = (row - start) * 2 * HALF
    tl.store(cos_ptr + base + cols, tl.cos(a), mask=m)
    tl.store(cos_ptr + base + HALF + cols, tl.cos(a), mask=m)
    tl.store(sin_ptr + base + cols, tl.sin(a), mask=m)
    tl.store(sin_ptr + base + HALF + cols, tl.sin(a), mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim=64, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq)
        t = torch.arange(MAX_POS, dtype=torch.float32)
        emb = torch.cat((torch.outer(t, inv_freq), torch.outer(t, inv_freq)), dim=-1)
        self.register_buffer("cos_cache", emb.cos(), persistent=False)
        self.register_buffer("sin_cache", emb.sin(), persistent=False)

    def forward(self, x):
        T = x.shape[0]
        half = self.inv_freq.shape[0]
        extra = max(T - MAX_POS, 1)
        cos_t = torch.empty(extra, 2 * half, device=x.device)
        sin_t = torch.empty(extra, 2 * half, device=x.device)
        _rope_tab[(extra,)](self.inv_freq, cos_t, sin_t, MAX_POS, T, HALF=half)
        if T <= MAX_POS:
            return self.cos_cache[:T], self.sin_cache[:T]
        return cos_t, sin_t
