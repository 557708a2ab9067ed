"""EXPECT: rejected
Wrong while the module is in training mode -- the default right after construction, and what
anyone fine-tuning through the op runs. Round nine: the judge called the candidate in
`.eval()` only, so `self.training` was always False in a trial; for an op with no dropout the
two modes must agree, and now some trials run it in train mode.

PROBLEM: rmsnorm_weight
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, N, eps, USE_W: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=m, other=0.0)
    ms = tl.sum(x * x, axis=0) / N
    y = x * (1.0 / tl.sqrt(ms + eps))
    if USE_W:
        y = y * tl.load(w_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + row * N + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        y = torch.empty_like(x)
        N = x.shape[-1]
        _rms[(x.numel() // N,)](
            x, self.weight, y, N, self.eps, USE_W=not self.training, BLOCK=triton.next_power_of_2(N)
        )
        return y
