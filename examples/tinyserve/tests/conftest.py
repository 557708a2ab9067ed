"""Test setup for tinyserve: CPU runs check the math of every layer, fast.

Both variables are read when torch and triton are imported, so they are set before either is.
"""

from __future__ import annotations

import os

# These tests check what the compiled functions compute, not Inductor: compiling on a CPU
# needs a C++ toolchain and costs seconds per function.
os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")

import torch  # noqa: E402

if not torch.cuda.is_available():
    # The Triton kernels run under Triton's interpreter on machines without a GPU.
    os.environ.setdefault("TRITON_INTERPRET", "1")
