"""The coarsest rounding a reference performs on its way to its outputs. A reference that
computes in fp32, rounds to bf16 partway (`norm(x.float()).type_as(x)`) and returns fp32 (times
an fp32 weight) carries bf16 values in an fp32 tensor: a kernel whose fp32 math differs in the
last bit before that rounding lands one bf16 ulp away, so its outputs are judged with bf16's
tolerance, not fp32's. Moving data (views, indexing, copies in one dtype) rounds nothing and is
not counted; arithmetic whose result is bf16/fp16, or a cast down to one, is. So is an fp32
convolution or matmul on a GPU where PyTorch lets it use TF32 (convolutions by default): TF32
reads its inputs with fp16's 10-bit mantissa, so the reference rounds to fp16's precision there
(an fp32 KernelBench convolution is off by about 1e-3 of its terms, and a kernel that repeats
another cuDNN algorithm or layout lands that far from it). Runs in the judge on the problem's
own reference only."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kbot.evaluate.roofline import tf32_allowed

LOW_PRECISION = (torch.float16, torch.bfloat16)
# aten ops that move or create values without computing new ones
_MOVES = frozenset(
    """view _unsafe_view reshape _reshape_alias select slice index index_select gather cat stack
    clone contiguous copy copy_ expand permute transpose t unsqueeze squeeze split
    split_with_sizes chunk narrow as_strided detach alias empty empty_like empty_strided zeros
    zeros_like ones ones_like full full_like lift_fresh unbind flip roll repeat embedding
    new_empty new_zeros new_ones new_full fill_ zero_ unfold movedim diagonal scalar_tensor
    _to_copy""".split()
)
# aten ops that run on tensor cores in TF32 when PyTorch allows it (cuDNN / cuBLAS)
_CONVOLUTIONS = frozenset(
    """convolution _convolution cudnn_convolution cudnn_convolution_transpose conv1d conv2d
    conv3d conv_transpose1d conv_transpose2d conv_transpose3d""".split()
)
_MATMULS = frozenset("mm addmm bmm baddbmm addbmm matmul linear _addmm_activation".split())


class _Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.rounded: set[torch.dtype] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        low = {t.dtype for t in _tensors(out) if t.dtype in LOW_PRECISION}
        if low and (name not in _MOVES or self._from_finer(args)):
            self.rounded |= low  # arithmetic, or a move that casts down (`_to_copy`, `copy_`)
        if name in _CONVOLUTIONS or name in _MATMULS:
            fp32_gpu = [t for t in _tensors(out) if t.dtype == torch.float32 and _on_gpu(t)]
            if fp32_gpu and tf32_allowed(convolution=name in _CONVOLUTIONS):
                self.rounded.add(torch.float16)  # TF32: fp16's mantissa
        return out

    @staticmethod
    def _from_finer(args) -> bool:
        return any(t.is_floating_point() and t.dtype not in LOW_PRECISION for t in _tensors(args))


def _on_gpu(tensor: torch.Tensor) -> bool:
    return tensor.is_cuda


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def coarsest_rounding(model: torch.nn.Module, inputs: list) -> torch.dtype | None:
    """Runs `model(*inputs)` once (the judge's warm-up run): bf16 or fp16 when it rounds to it
    (bf16 when both), else None. A reference that cannot run under the recorder is run again
    without it (its own failure propagates) and keeps the default tolerances (None)."""
    recorder = _Recorder()
    try:
        with torch.no_grad(), recorder:
            model(*inputs)
    except Exception:
        with torch.no_grad():
            model(*inputs)
        return None
    if torch.bfloat16 in recorder.rounded:
        return torch.bfloat16
    return torch.float16 if recorder.rounded else None


def tolerance_dtype(output: torch.dtype, rounded_to: torch.dtype | None) -> torch.dtype:
    """The dtype whose default tolerance an output is judged with: its own, or the reference's
    coarsest rounding when that is coarser than an fp32/fp64 output."""
    if rounded_to is not None and output in (torch.float32, torch.float64):
        return rounded_to
    return output
