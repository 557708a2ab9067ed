import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_rows_in_place_kernel(x_ptr, scale_ptr, max_ptr, width, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < width
    x = tl.load(x_ptr + row * width + cols, mask=mask, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    # x.mul_(scale) rounds to the input dtype before amax reads it
    scaled = (x * scale).to(x_ptr.dtype.element_ty)
    tl.store(x_ptr + row * width + cols, scaled, mask=mask)
    largest = tl.max(tl.where(mask, scaled.to(tl.float32), float("-inf")), axis=0)
    tl.store(max_ptr + row, largest.to(max_ptr.dtype.element_ty))


def scale_rows_in_place(x, scale):
    out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
    width = x.shape[-1]
    _scale_rows_in_place_kernel[(x.shape[0],)](
        x, scale, out, width, BLOCK=triton.next_power_of_2(width)
    )
    return out


class ModelNew(nn.Module):
    def forward(self, x, scale):
        return scale_rows_in_place(x, scale)
