"""The roofline a timing is held against: the device's measured peaks (copy and read-only
bandwidth; bf16, TF32 and fp32-FMA matmul rates; measured once per device and torch version, cached under
$XDG_CACHE_HOME/kbot or ~/.cache/kbot), the bytes and FLOPs of one call of the reference, and
which of the FLOP rates those FLOPs may use (the dtypes of the counted ops and whether the judge
lets fp32 matmuls use TF32 when the reference runs)."""

from __future__ import annotations

import contextlib
import enum
import json
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kbot.evaluate.traffic import read_bytes

# Above this fraction of the ceiling (bytes at the faster of the copy and read-only rates,
# FLOPs at the compute peak) the measurement, not the kernel, is wrong. The ceiling is not the
# memory's rated peak: a reduction reads faster than a copy moves bytes (KernelBench L1/94's
# mean over 8.6 GB, read in 2713 us on an H100, is 106% of its 2.99 TB/s copy rate;
# torch.compile's on the H200, 1863 us, 111% of 4.17), and torch's own reduction, which
# measures the read rate, stops short of the best kernel by a few percent. 10% above the read
# rate is at or above the rated peak of the parts measured (copy at 87-89% of the H200's and
# H100's rated 4.8 and 3.35 TB/s, reads above that).
ROOFLINE_LIMIT = 1.10
# 3: copy, read, bf16, TF32 and fp32 FMA. Entries of older schemas (2: no read rate; 1: copy
# and bf16 only) are left unread, so a device is measured again once.
CACHE_SCHEMA = 3
_COPY_BYTES = 1 << 30
# 8192³ keeps every H200 SM busy (4096 output tiles of 128x128 over 132 SMs: 31 waves). One
# call takes about 1.6 ms in bf16, 3 ms in TF32 and 20 ms in fp32 FMA, so fp32 gets fewer
# repeats: all four peaks together measure in well under a second there.
_MATMUL_N = 8192
_MATMUL_REPEATS = {"bf16": 10, "tf32": 10, "fp32": 5}
# FLOP-counted ops that cuDNN runs (its TF32 flag, on by default); the others go to cuBLAS or
# attention kernels (the matmul flag, off by default).
_CONVOLUTIONS = frozenset(
    {
        "convolution",
        "_convolution",
        "cudnn_convolution",
        "convolution_overrideable",
        "_slow_conv2d_forward",
        "convolution_backward",
    }
)


def cache_path() -> Path:
    """Where measured peaks are kept, resolved when used (never at import): under an absolute
    $XDG_CACHE_HOME (the XDG spec ignores a relative one), else ~/.cache."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "kbot" / "device-peaks.json"


class Arithmetic(str, enum.Enum):
    """The arithmetic a reference's FLOP-counted ops run in, by the peak they may reach."""

    FP32 = "fp32"  # fp32 (or fp64) operands, TF32 not allowed: FMA on CUDA cores
    TF32 = "tf32"  # fp32 operands where the judge allows TF32 (cuDNN convolutions by default)
    BF16 = "bf16"  # 16-bit (or narrower) operands: tensor cores


# slowest first: a reference mixing arithmetics is held against the slowest it uses
_SLOWEST_FIRST = (Arithmetic.FP32, Arithmetic.TF32, Arithmetic.BF16)
_PEAK_NAMES = {
    Arithmetic.FP32: "fp32 FMA",
    Arithmetic.TF32: "TF32 tensor core",
    Arithmetic.BF16: "bf16 tensor core",
}


@dataclass(frozen=True)
class Peak:
    """One measured rate a timing is held against, named as the reports show it."""

    name: str  # "copy", "streaming", "fp32 FMA", "TF32 tensor core", "bf16 tensor core"
    rate_per_s: float  # bytes per second for copy (read + write) and streaming, else FLOPs

    @property
    def label(self) -> str:
        unit = "TB/s" if self.name in ("copy", "streaming") else "TFLOP/s"
        return f"{self.name} {self.rate_per_s / 1e12:.3g} {unit}"


@dataclass(frozen=True)
class DevicePeaks:
    device_name: str
    copy_bytes_per_s: float  # read + write
    read_bytes_per_s: float  # read only: torch's sum of 1 GiB, the fastest of its calls
    # torch.matmul at 8192³. fp16 shares bf16's figure (the same tensor-core rate on Hopper
    # and Ampere), and fp64 fp32's (the same on H100/H200; where fp64 is slower the fraction
    # reads low, never falsely high).
    bf16_flops_per_s: float
    tf32_flops_per_s: float
    fp32_flops_per_s: float  # FMA on CUDA cores, TF32 disabled

    @property
    def copy(self) -> Peak:
        return Peak("copy", self.copy_bytes_per_s)

    @property
    def streaming(self) -> Peak:
        """The fastest this device has been seen to move bytes, read or copied: the ceiling a
        timing may not pass by more than ROOFLINE_LIMIT (the reports' roofline stays copy)."""
        return Peak("streaming", max(self.copy_bytes_per_s, self.read_bytes_per_s))

    def compute(self, arithmetic: Arithmetic | None) -> Peak:
        """The FLOP rate of `arithmetic`; None (FLOPs the dtype recorder did not see) gets the
        fastest, so the fraction errs low rather than above ROOFLINE_LIMIT."""
        rates = {
            Arithmetic.FP32: self.fp32_flops_per_s,
            Arithmetic.TF32: self.tf32_flops_per_s,
            Arithmetic.BF16: self.bf16_flops_per_s,
        }
        chosen = arithmetic or Arithmetic.BF16
        return Peak(_PEAK_NAMES[chosen], rates[chosen])


def device_peaks(device: torch.device, cache_file: Path | None = None) -> DevicePeaks:
    """The device's peaks, from the cache or measured now (then written to it)."""
    path = cache_file or cache_path()
    name = torch.cuda.get_device_name(device)
    key = f"schema {CACHE_SCHEMA} | {name} | torch {torch.__version__.split('+')[0]}"
    cached = _read_cache(path)
    peaks = _peaks_from_json(cached.get(key))
    if peaks is not None:
        return peaks
    peaks = DevicePeaks(
        name,
        copy_bytes_per_s=_copy_bandwidth(device),
        read_bytes_per_s=_read_bandwidth(device),
        bf16_flops_per_s=_matmul_rate(device, torch.bfloat16, tf32=False),
        tf32_flops_per_s=_matmul_rate(device, torch.float32, tf32=True),
        fp32_flops_per_s=_matmul_rate(device, torch.float32, tf32=False),
    )
    cached[key] = asdict(peaks)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(cached, indent=2))
        partial.replace(path)
    except OSError:  # an unwritable cache costs a measurement next time, not the figures
        pass
    return peaks


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _peaks_from_json(entry) -> DevicePeaks | None:
    """A cached entry of this schema, or None (missing, malformed, or not a positive rate:
    the device is measured again)."""
    names = [f.name for f in fields(DevicePeaks)]
    if not isinstance(entry, dict) or sorted(entry) != sorted(names):
        return None
    rates = [entry[n] for n in names[1:]]
    if not isinstance(entry["device_name"], str) or not all(
        isinstance(r, (int, float)) and not isinstance(r, bool) and math.isfinite(r) and r > 0
        for r in rates
    ):
        return None
    return DevicePeaks(entry["device_name"], *(float(r) for r in rates))


def _times_ms(call, repeats: int) -> list[float]:
    """Each of `repeats` calls' milliseconds on the device's clock, after three warm-up calls."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def _median_ms(call, repeats: int) -> float:
    times = sorted(_times_ms(call, repeats))
    return times[len(times) // 2]


def _copy_bandwidth(device: torch.device) -> float:
    source = torch.empty(_COPY_BYTES, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    ms = _median_ms(lambda: target.copy_(source), 20)
    return 2 * _COPY_BYTES / (ms / 1000.0)


def _read_bandwidth(device: torch.device) -> float:
    """Bytes per second of a sum over 1 GiB of fp32: the fastest of its calls, as a ceiling
    wants (the copy rate's median is the reports' roofline, which this one is not)."""
    source = torch.ones(_COPY_BYTES // 4, dtype=torch.float32, device=device)
    fastest = min(_times_ms(source.sum, 20))
    return _COPY_BYTES / (fastest / 1000.0)


def _matmul_rate(device: torch.device, dtype: torch.dtype, tf32: bool) -> float:
    a = torch.randn(_MATMUL_N, _MATMUL_N, dtype=dtype, device=device)
    b = torch.randn(_MATMUL_N, _MATMUL_N, dtype=dtype, device=device)
    kind = "bf16" if dtype != torch.float32 else "tf32" if tf32 else "fp32"
    with _tf32_matmuls(tf32):
        ms = _median_ms(lambda: torch.matmul(a, b), _MATMUL_REPEATS[kind])
    return 2 * _MATMUL_N**3 / (ms / 1000.0)


@contextlib.contextmanager
def _tf32_matmuls(allowed: bool):
    """cuBLAS's fp32 matmuls with TF32 allowed or not, as they were afterwards. Through the
    per-backend flag where torch has it (2.9+): setting the legacy `allow_tf32` after that
    one makes torch refuse to read either."""
    flags = torch.backends.cuda.matmul
    if hasattr(flags, "fp32_precision"):
        name, value = "fp32_precision", "tf32" if allowed else "ieee"
    else:  # torch before 2.9: the legacy flag only
        name, value = "allow_tf32", allowed
    saved = getattr(flags, name)
    setattr(flags, name, value)
    try:
        yield
    finally:
        setattr(flags, name, saved)


def tf32_allowed(convolution: bool) -> bool:
    """Whether this process lets fp32 matmuls (cuBLAS) or convolutions (cuDNN) use TF32 now.
    PyTorch's defaults: matmuls no (`get_float32_matmul_precision() == "highest"`),
    convolutions yes."""
    try:
        flags = torch.backends.cudnn.conv if convolution else torch.backends.cuda.matmul
        return flags.fp32_precision == "tf32"  # resolved through the global flag
    except AttributeError:  # torch before 2.9
        legacy = torch.backends.cudnn if convolution else torch.backends.cuda.matmul
        return bool(legacy.allow_tf32)


def tensor_bytes(values) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def bytes_moved(inputs: list, model: torch.nn.Module, outputs: tuple) -> int:
    """What one call can touch: every input, parameter and buffer by the bytes the reference
    reads of it, once (a buffer indexed by a gather by its gathered rows, a slice by the slice;
    kbot.evaluate.traffic), every output written once. Where the reference cannot be traced
    that way, every input, parameter and buffer in full."""
    state = list(model.parameters()) + list(model.buffers())
    tensors = [v for v in inputs if isinstance(v, torch.Tensor)] + state
    reads = read_bytes(model, inputs, tensors)
    if reads is None:
        return tensor_bytes(inputs) + tensor_bytes(state) + tensor_bytes(outputs)
    return sum(reads.values()) + tensor_bytes(outputs)


@dataclass(frozen=True)
class Work:
    """The FLOPs of one reference call and the arithmetic they run in (None: no counted op)."""

    flops: int
    arithmetic: Arithmetic | None


class _CountedArithmetic(TorchDispatchMode):
    """Records the arithmetic of every op PyTorch's FLOP counter counts: by the widest floating
    dtype of its first two tensor operands (the ones multiplied: a matmul's matrices, a
    convolution's input and weight, attention's query and key; not _scaled_mm's fp32 scales),
    and for fp32 whether TF32 is allowed at the moment the op runs."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[Arithmetic] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.utils.flop_counter import flop_registry

        packet = getattr(func, "_overloadpacket", None)
        if packet is not None and packet in flop_registry:
            operands = [a for a in args if isinstance(a, torch.Tensor)][:2]
            widths = [a.element_size() for a in operands if a.dtype.is_floating_point]
            if widths:
                self.seen.add(_arithmetic(max(widths), packet.__name__ in _CONVOLUTIONS))
        return func(*args, **(kwargs or {}))


def _arithmetic(width_bytes: int, convolution: bool) -> Arithmetic:
    if width_bytes <= 2:
        return Arithmetic.BF16
    return Arithmetic.TF32 if tf32_allowed(convolution) else Arithmetic.FP32


def count_work(model: torch.nn.Module, inputs: list) -> Work:
    """FLOPs of one reference call as PyTorch's ATen-level counter sees them (matmuls,
    convolutions, attention; pointwise work is left to the bandwidth roofline), and the
    slowest arithmetic among the counted ops."""
    from torch.utils.flop_counter import FlopCounterMode

    recorder, counter = _CountedArithmetic(), FlopCounterMode(display=False)
    # the counter is entered last so that it sees each op first; the ops it decomposes reach
    # the recorder as the pieces it counts
    with recorder, counter, torch.no_grad():
        model(*inputs)
    slowest = next((a for a in _SLOWEST_FIRST if a in recorder.seen), None)
    return Work(int(counter.get_total_flops()), slowest)


def roofline_fraction(
    bytes_count: int, flops: int, median_us: float, copy: Peak, compute: Peak
) -> float:
    """The time the tighter of the two bounds allows, over the time measured."""
    seconds = median_us / 1e6
    if seconds <= 0:
        return float("inf")
    return max(bytes_count / copy.rate_per_s, flops / compute.rate_per_s) / seconds


def ceiling_fraction(bytes_count: int, work: Work, median_us: float, peaks: DevicePeaks) -> float:
    """The fraction of the ceiling (bytes at the streaming rate, FLOPs at their arithmetic's
    peak) a timing claims: above ROOFLINE_LIMIT the measurement is wrong."""
    return roofline_fraction(
        bytes_count, work.flops, median_us, peaks.streaming, peaks.compute(work.arithmetic)
    )


def bounding_peak(bytes_count: int, flops: int, copy: Peak, compute: Peak) -> Peak:
    """The peak whose bound is the tighter one (copy where there are no FLOPs): the one a
    report names beside the fraction."""
    return compute if flops / compute.rate_per_s > bytes_count / copy.rate_per_s else copy
