import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rope_kernel(q_ptr, pos_ptr, cache_ptr, out_ptr, n_heads, HALF: tl.constexpr):
    token = tl.program_id(0)
    head = tl.program_id(1)
    pos = tl.load(pos_ptr + token)
    offs = tl.arange(0, HALF)
    cos = tl.load(cache_ptr + pos * 2 * HALF + offs)
    sin = tl.load(cache_ptr + pos * 2 * HALF + HALF + offs)
    base = (token * n_heads + head) * 2 * HALF
    q1 = tl.load(q_ptr + base + offs).to(tl.float32)
    q2 = tl.load(q_ptr + base + HALF + offs).to(tl.float32)
    tl.store(out_ptr + base + offs, (q1 * cos - q2 * sin).to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + base + HALF + offs, (q2 * cos + q1 * sin).to(out_ptr.dtype.element_ty))


def rope(positions, q, cos_sin_cache):
    n_tokens, n_heads, head_dim = q.shape
    q = q.contiguous()
    out = torch.empty_like(q)
    grid = (n_tokens, n_heads)
    _rope_kernel[grid](q, positions, cos_sin_cache, out, n_heads, HALF=head_dim // 2)
    return out


class ModelNew(nn.Module):
    def __init__(self, head_dim, max_positions, base=10000.0):
        super().__init__()
        self.register_buffer("cos_sin_cache", torch.empty(max_positions, head_dim))
        self.head_dim = head_dim

    def forward(self, positions, q):
        return rope(positions, q, self.cos_sin_cache)
