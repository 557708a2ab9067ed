"""EXPECT: rejected
Neox rotary embedding whose cos/sin table comes from a module-level cache keyed by
(head_dim, max_positions) but not the base: in a model whose layers use two bases (Gemma 3's
local and global attention, 10k and 1M), every layer after the first base's gets that base's
table. The judge built ModelNew twice from the same values, so the cache always held the right
table; it now builds a decoy from other constructor values first.

PROBLEM: rope
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_TABLES = {}


@triton.jit
def _rope(pos_ptr, q_ptr, table_ptr, out_ptr, H, HALF: tl.constexpr):
    token = tl.program_id(0)
    head = tl.program_id(1)
    cols = tl.arange(0, HALF)
    pos = tl.load(pos_ptr + token)
    cos = tl.load(table_ptr + pos * 2 * HALF + cols)
    sin = tl.load(table_ptr + pos * 2 * HALF + HALF + cols)
    base = (token * H + head) * 2 * HALF
    q1 = tl.load(q_ptr + base + cols).to(tl.float32)
    q2 = tl.load(q_ptr + base + HALF + cols).to(tl.float32)
    tl.store(out_ptr + base + cols, (q1 * cos - q2 * sin).to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + base + HALF + cols, (q2 * cos + q1 * sin).to(out_ptr.dtype.element_ty))


def rope(positions, q, table, head_dim):
    T, H, _ = q.shape
    q = q.contiguous()
    out = torch.empty_like(q)
    _rope[(T, H)](positions, q, table, out, H, HALF=head_dim // 2)
    return out


class ModelNew(nn.Module):
    def __init__(self, head_dim, max_positions, base=10000.0):
        super().__init__()
        key = (head_dim, max_positions)  # the base is left out of the key
        if key not in _TABLES:
            inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
            freqs = torch.outer(torch.arange(max_positions).float(), inv_freq)
            _TABLES[key] = torch.cat([freqs.cos(), freqs.sin()], dim=-1)
        self.table = _TABLES[key]
        self.head_dim = head_dim

    def forward(self, positions, q):
        return rope(positions, q, self.table, self.head_dim)
