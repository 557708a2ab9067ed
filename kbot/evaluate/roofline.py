"""The roofline a timing is held against: the device's measured copy bandwidth and bf16 matmul
rate (measured once per device, cached in ~/.cache/kbot/device-peaks.json), and the bytes and
FLOPs of one call of the reference."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from kbot.evaluate.traffic import read_bytes

CACHE_PATH = Path.home() / ".cache" / "kbot" / "device-peaks.json"
# Above this the measurement, not the kernel, is wrong: a read-heavy kernel can beat a copy
# benchmark by a few percent (torch.compile's SiLU-and-mul measured 102% on the H200).
ROOFLINE_LIMIT = 1.05
_COPY_BYTES = 1 << 30
_MATMUL_N = 8192


@dataclass(frozen=True)
class DevicePeaks:
    device_name: str
    copy_bytes_per_s: float  # read + write
    matmul_flops_per_s: float  # bf16


def device_peaks(device: torch.device, cache_path: Path = CACHE_PATH) -> DevicePeaks:
    name = torch.cuda.get_device_name(device)
    key = f"{name} | torch {torch.__version__.split('+')[0]}"
    cached = _read_cache(cache_path)
    if key in cached:
        return DevicePeaks(**cached[key])
    peaks = DevicePeaks(name, _copy_bandwidth(device), _matmul_rate(device))
    cached[key] = asdict(peaks)
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    partial = cache_path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(cached, indent=2))
    partial.replace(cache_path)
    return peaks


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _median_ms(call, repeats: int) -> float:
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
    return sorted(times)[len(times) // 2]


def _copy_bandwidth(device: torch.device) -> float:
    source = torch.empty(_COPY_BYTES, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    ms = _median_ms(lambda: target.copy_(source), 20)
    return 2 * _COPY_BYTES / (ms / 1000.0)


def _matmul_rate(device: torch.device) -> float:
    a = torch.randn(_MATMUL_N, _MATMUL_N, dtype=torch.bfloat16, device=device)
    b = torch.randn(_MATMUL_N, _MATMUL_N, dtype=torch.bfloat16, device=device)
    ms = _median_ms(lambda: torch.matmul(a, b), 10)
    return 2 * _MATMUL_N**3 / (ms / 1000.0)


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


def count_flops(model: torch.nn.Module, inputs: list) -> int:
    """FLOPs of one reference call as PyTorch's ATen-level counter sees them (matmuls,
    convolutions, attention); pointwise work is left to the bandwidth roofline."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(*inputs)
    return int(counter.get_total_flops())


def roofline_fraction(bytes_count: int, flops: int, median_us: float, peaks: DevicePeaks) -> float:
    seconds = median_us / 1e6
    if seconds <= 0:
        return float("inf")
    bandwidth = bytes_count / seconds / peaks.copy_bytes_per_s
    compute = flops / seconds / peaks.matmul_flops_per_s
    return max(bandwidth, compute)
