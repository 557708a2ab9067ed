"""EXPECT: rejected
Patches its process's `wire.Outbox.add` so that each reply's tensors declare 60 GiB over the few
bytes they really wrote: a judge that sizes its buffers by what a reply says allocates 60 GiB
(pinned, on a GPU) before it reads a byte, and a torch error from the made-up size escapes its
handling of unreadable replies. The candidate's harness sees the patch (module-patching); the
judge also refuses, before allocating, a reply whose tensors declare more than was due or more
than its file holds (tests/evaluate/test_exchange_files.py, which also shows nothing is
allocated). On a CPU host the judge before that fix rejected it too (the 60 GiB buffer was
reserved lazily, then the short read seen); the pinned buffer of a GPU host is where it bit.

PROBLEM: quick_gelu
CLASS: judge
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_WIRE = torch.sys.modules.get("kbot.evaluate.wire")
if _WIRE is not None:
    _ADD = _WIRE.Outbox.add

    def _sixty_gib(self, tensor):
        entry = _ADD(self, tensor)
        if "reply-" in self.path.name:
            body = entry["tensor"]
            body["nbytes"] = 60 << 30
            body["span"] = body["nbytes"] // tensor.element_size()
        return entry

    _WIRE.Outbox.add = _sixty_gib


@triton.jit
def _quick_gelu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(1.702 * x)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def quick_gelu(x):
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n_elements = x_flat.numel()
    BLOCK = 256
    _quick_gelu_kernel[(triton.cdiv(n_elements, BLOCK),)](x_flat, out, n_elements, BLOCK=BLOCK)
    return out.view_as(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return quick_gelu(x)
