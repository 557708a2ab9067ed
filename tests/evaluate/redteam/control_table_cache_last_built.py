"""EXPECT: rejected
Neox rotary embedding whose cos/sin table lives in a module-level cache keyed by
(head_dim, max_positions), rebuilt by a construction with another base and read at every call:
in a model whose layers use two bases (Gemma 3's local and global attention), every layer reads
the table of the last base built. Built twice alike (after a decoy), the judged instance's base
was the last built; the judge now builds a decoy from other constructor values after it too.

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
        self.key = (head_dim, max_positions)  # the base is left out of the key
        if _TABLES.get(self.key, (None,))[0] != base:  # rebuilt only for another base
            inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
            freqs = torch.outer(torch.arange(max_positions).float(), inv_freq)
            _TABLES[self.key] = (base, torch.cat([freqs.cos(), freqs.sin()], dim=-1))
        self.head_dim = head_dim

    def forward(self, positions, q):
        return rope(positions, q, _TABLES[self.key][1], self.head_dim)
