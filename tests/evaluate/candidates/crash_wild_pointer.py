import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _wild_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    # Reads a terabyte past the input: an illegal memory access on a GPU, SIGSEGV on a CPU.
    x = tl.load(x_ptr + offsets + (1 << 40), mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x, mask=mask)


def wild(x):
    out = torch.empty_like(x)
    _wild_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return wild(x)
