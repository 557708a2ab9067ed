"""The base of layers that have a portable PyTorch path and may have a faster device path."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class CustomOp(nn.Module):
    """A layer with one reference implementation and optional per-backend fast paths.

    Subclasses write `forward_native` in plain PyTorch (the reference, runs anywhere) and may
    override `forward_cuda` with a kernel. `forward` picks the path from the device of the
    first tensor argument rather than from what the machine has, so a layer called with CPU
    tensors on a GPU host still runs, and tests can compare both paths in one process.
    """

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else next(iter(kwargs.values()), None)
        if isinstance(first, torch.Tensor) and first.is_cuda:
            return self.forward_cuda(*args, **kwargs)
        return self.forward_native(*args, **kwargs)

    def forward_native(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement forward_native")

    def forward_cuda(self, *args: Any, **kwargs: Any) -> Any:
        # No CUDA kernel yet: the reference is correct everywhere, just not fast.
        return self.forward_native(*args, **kwargs)
