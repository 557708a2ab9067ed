import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bias_silu_kernel(h_ptr, bias_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    h = tl.load(h_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    z = h + b
    tl.store(
        out_ptr + row * n_cols + cols, (z * tl.sigmoid(z)).to(out_ptr.dtype.element_ty), mask=mask
    )


def matmul_bias_silu(x, weight, bias):
    # The matmul is the problem's declared extern op (cuBLAS); the epilogue is fused in Triton.
    h = torch.matmul(x, weight.t()).contiguous()
    out = torch.empty_like(h)
    n_cols = h.shape[-1]
    _bias_silu_kernel[(h.shape[0],)](h, bias, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features, dtype=dtype))
        self.bias = nn.Parameter(torch.empty(out_features, dtype=dtype))

    def forward(self, x):
        return matmul_bias_silu(x, self.weight, self.bias)
