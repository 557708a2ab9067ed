"""Values crossing between the judge and a candidate's process: JSON for structure, raw bytes in
a file for every tensor. Data only, in both directions: nothing is unpickled or executed, and a
value the judge reads back is rebuilt from its declared dtype, shape and strides, checked
against the bytes that actually arrived.

A tensor travels as the span of storage its view can reach (so transposed, sliced and expanded
inputs keep their strides), as bytes, and is rebuilt with `as_strided` over a fresh buffer.
"""

from __future__ import annotations

import dataclasses
import math
import os
import stat
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

# The dtypes a tensor may travel in; anything else is refused by name (a candidate cannot make
# the judge build an object of a type it names).
DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name)
    for name in (
        "float64",
        "float32",
        "float16",
        "bfloat16",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
        "complex64",
        "complex128",
        "float8_e4m3fn",
        "float8_e5m2",
    )
    if hasattr(torch, name)
}
_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
# A reply may not make the judge allocate without bound: a declared tensor larger than this is
# refused before any memory is reserved for it.
MAX_TENSOR_BYTES = 64 << 30
MAX_DEPTH = 8
# Tensors at least this large cross between host and GPU through pinned memory.
_PINNED_MIN_BYTES = 16 << 20
# A payload file is created, never opened: a name that exists (a planted file or link) fails.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class WireError(ValueError):
    """A value that cannot travel, or a reply that does not describe what arrived."""


@dataclass
class Outbox:
    """Collects the tensors of one message into one payload file.

    `folder_fd`: the folder, opened by the judge before the candidate's process started, that
    the file is created in by name. The candidate's process can write in that folder: a path
    walked again at each write would follow a link it planted there (a request file named
    `/proc/self/cwd/../x`, which resolves inside the sandbox for the candidate and outside it
    for the judge, made the judge write its payload outside the sandbox)."""

    path: Path
    chunks: list[Any]  # numpy uint8 arrays, written in order
    offset: int = 0
    folder_fd: int | None = None

    @classmethod
    def at(cls, path: Path, folder_fd: int | None = None) -> Outbox:
        return cls(path, [], folder_fd=folder_fd)

    def add(self, tensor: torch.Tensor) -> dict[str, Any]:
        span, _ = storage_span(tensor)
        if tensor.dtype not in _DTYPE_NAMES:
            raise WireError(f"a tensor of dtype {tensor.dtype} cannot be sent")
        raw = _host_bytes(span_bytes(tensor)).numpy()
        entry = {
            "tensor": {
                "dtype": _DTYPE_NAMES[tensor.dtype],
                "shape": list(tensor.shape),
                "stride": list(tensor.stride()),
                "span": span,
                "at": self.offset,
                "nbytes": int(raw.nbytes),
                "device": tensor.device.type,
            }
        }
        self.chunks.append(raw)
        self.offset += int(raw.nbytes)
        return entry

    def write(self) -> str:
        """Writes the payload to a file that did not exist (never through a link), returns
        its path."""
        name = self.path.name if self.folder_fd is not None else self.path
        fd = os.open(name, _NEW_FILE, 0o600, dir_fd=self.folder_fd)
        with os.fdopen(fd, "wb") as handle:
            for chunk in self.chunks:
                chunk.tofile(handle)
        return str(self.path)


def encode(value: Any, outbox: Outbox, depth: int = 0) -> Any:
    """`value` (tensors, numbers, strings, None, dtypes, lists/tuples/dicts of them, and the
    fields of a dataclass or namespace) as JSON."""
    if depth > MAX_DEPTH:
        raise WireError("a value nested deeper than 8 levels cannot be sent")
    if isinstance(value, torch.Tensor):
        return outbox.add(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, torch.dtype):
        if value not in _DTYPE_NAMES:
            raise WireError(f"dtype {value} cannot be sent")
        return {"dtype": _DTYPE_NAMES[value]}
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [encode(v, outbox, depth + 1) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v, outbox, depth + 1) for k, v in value.items()}}
    fields = _attributes(value)
    if fields is not None:  # a config object: its fields, rebuilt as a namespace
        return {"attrs": {k: encode(v, outbox, depth + 1) for k, v in fields.items()}}
    raise WireError(f"a {type(value).__name__} cannot be sent between processes")


def decode(
    data: Any, payload: str | int | None, device: torch.device, depth: int = 0, readers: int = 1
) -> Any:
    """The value `encode` described, its tensors read from `payload` onto `device` (a tensor
    declared on the CPU stays there, so a wrong output device is still seen). `readers`: threads
    that read a large tensor's bytes (the judge's; a candidate's process starts no threads)."""
    if depth > MAX_DEPTH:
        raise WireError("a value nested deeper than 8 levels")
    if data is None or isinstance(data, (bool, int, str, float)):
        return data
    if isinstance(data, dict) and len(data) == 1:
        ((kind, body),) = data.items()
        if kind == "tensor":
            return _read_tensor(body, payload, device, readers)
        if kind == "float" and body in ("inf", "-inf", "nan"):
            return float(body)
        if kind == "dtype" and body in DTYPES:
            return DTYPES[body]
        if kind in ("list", "tuple") and isinstance(body, list):
            items = [decode(v, payload, device, depth + 1, readers) for v in body]
            return items if kind == "list" else tuple(items)
        if kind == "dict" and isinstance(body, dict):
            return {str(k): decode(v, payload, device, depth + 1, readers) for k, v in body.items()}
        if kind == "attrs" and isinstance(body, dict):
            return types.SimpleNamespace(
                **{str(k): decode(v, payload, device, depth + 1, readers) for k, v in body.items()}
            )
    raise WireError(f"an undecodable value: {str(data)[:80]}")


def declared_bytes(data: Any, depth: int = 0) -> int:
    """The bytes the tensors of an encoded value say they hold, summed before any is read (the
    judge refuses a reply that declares more than was due)."""
    if depth > MAX_DEPTH or not isinstance(data, (dict, list)):
        return 0
    if isinstance(data, list):
        return sum(declared_bytes(v, depth + 1) for v in data)
    if len(data) == 1 and isinstance(data.get("tensor"), dict):
        nbytes = data["tensor"].get("nbytes")
        return nbytes if isinstance(nbytes, int) and nbytes > 0 else 0
    return sum(declared_bytes(v, depth + 1) for v in data.values())


def _attributes(value: Any) -> dict[str, Any] | None:
    """The fields of a dataclass instance or a SimpleNamespace (a constructor's configuration
    object, `RoPE(config)`): what crosses is their values, which arrive as a namespace of the
    same attributes; any other object is refused."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if type(value) is types.SimpleNamespace:
        return dict(vars(value))
    return None


def _read_tensor(
    body: Any, payload: str | int | None, device: torch.device, readers: int = 1
) -> torch.Tensor:
    if payload is None or not isinstance(body, dict):
        raise WireError("a tensor without its payload")
    dtype = DTYPES.get(body.get("dtype"))
    shape, stride = body.get("shape"), body.get("stride")
    span, at, nbytes = body.get("span"), body.get("at"), body.get("nbytes")
    if dtype is None or not _ints(shape) or not _ints(stride) or len(shape) != len(stride):
        raise WireError("a tensor with an unknown dtype or a malformed shape")
    if not all(isinstance(v, int) and v >= 0 for v in (span, at, nbytes)):
        raise WireError("a tensor with a malformed extent")
    itemsize = torch.empty((), dtype=dtype).element_size()
    if nbytes != span * itemsize or nbytes > MAX_TENSOR_BYTES:
        raise WireError("a tensor whose byte count does not match its extent")
    if any(s < 0 for s in shape) or any(s < 0 for s in stride):
        raise WireError("a tensor with negative sizes or strides")
    reach = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    if reach > span:
        raise WireError("a tensor whose strides reach past the bytes sent")
    if isinstance(payload, int) and at + nbytes > os.fstat(payload).st_size:
        # before the buffer: a reply declaring 60 GiB over a file of a few bytes must not
        # have the judge allocate them (pinned) first
        raise WireError("a tensor's bytes are missing from the payload")
    # Read straight into one buffer (pinned on the way to a GPU), then onto the device: a
    # KernelBench input of 6 GB crosses three times per trial.
    target = torch.device("cpu") if body.get("device") == "cpu" else device
    flat = _host_buffer(nbytes, staged=target.type == "cuda")
    arrived = _read_at(payload, at, memoryview(flat.numpy()), readers) if nbytes else 0
    if arrived != nbytes:
        raise WireError("a tensor's bytes are missing from the payload")
    flat = flat.view(dtype) if nbytes else torch.empty(0, dtype=dtype)
    flat = flat.to(target) if target.type != "cpu" else flat
    return torch.as_strided(flat, tuple(shape), tuple(stride), 0)


def open_regular(name: str | Path, folder_fd: int | None = None) -> int:
    """A file the candidate's process can write over, opened for reading: only a regular file,
    never through a link and never waiting on a pipe (O_NONBLOCK: a FIFO in a reply's place once
    held the judge in `open` for good). Relative to `folder_fd` where given. The caller closes
    it."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=folder_fd)  # fmt: skip
    except OSError as exc:
        raise WireError(f"{str(name)!r} cannot be opened ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WireError(f"{str(name)!r} is not a regular file")
    return fd


def open_payload(folder_fd: int, name: str, max_bytes: int) -> int:
    """A reply's payload file in the folder `folder_fd` (open_regular), of at most
    `max_bytes`."""
    fd = open_regular(name, folder_fd)
    size = os.fstat(fd).st_size
    if size > max_bytes:
        os.close(fd)
        raise WireError(f"a reply of {size} bytes where at most {max_bytes} were due")
    return fd


# Reads at least this large are split over the readers' threads: on the H100 one thread read a
# 2 GiB payload at 7-9 GB/s and eight threads at 38 GB/s (bench/wire_cost.py, 2026-12-06).
PARALLEL_MIN_BYTES = 64 << 20


def _read_at(payload: str | int, at: int, into: memoryview, readers: int = 1) -> int:
    """Bytes read from `payload` (a path, or a descriptor open_payload gave) at offset `at`,
    large reads in `readers` slices side by side. A slice cut short leaves the count short,
    whatever the others read."""
    if not isinstance(payload, int):
        fd = os.open(payload, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return _read_at(fd, at, into, readers)
        finally:
            os.close(fd)
    if readers <= 1 or len(into) < PARALLEL_MIN_BYTES:
        return _pread(payload, at, into)
    step = -(-len(into) // readers)
    starts = range(0, len(into), step)
    with ThreadPoolExecutor(readers) as pool:
        counts = pool.map(lambda lo: _pread(payload, at + lo, into[lo : lo + step]), starts)
        return sum(counts)


def _pread(fd: int, at: int, into: memoryview) -> int:
    """Bytes read from `fd` at offset `at` into `into`, until it is full or the file ends."""
    done = 0
    while done < len(into):
        got = os.preadv(fd, [into[done:]], at + done)
        if got == 0:
            break
        done += got
    return done


def _host_bytes(data: torch.Tensor) -> torch.Tensor:
    """`data` (flat bytes) in host memory: a large GPU tensor through a pinned buffer."""
    if not data.is_cuda:
        return data
    host = _host_buffer(data.numel(), staged=True)
    host.copy_(data)
    return host


def _host_buffer(nbytes: int, staged: bool) -> torch.Tensor:
    """Host memory for `nbytes` crossing to or from a GPU: pinned when large (a 6.4 GB input
    crossed at ~1.2 GB/s through pageable memory on the H200; pinned copies run at the bus's
    speed, and torch's host allocator keeps the buffer for the next trial), else pageable."""
    if staged and nbytes >= _PINNED_MIN_BYTES:
        try:
            return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        except RuntimeError:  # no pinnable memory left: the slower path still works
            pass
    return torch.empty(nbytes, dtype=torch.uint8)


def _ints(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(v, int) for v in values)


def storage_span(tensor: torch.Tensor) -> tuple[int, int]:
    """(elements of storage the view reaches, from its first one; that first one's offset)."""
    if tensor.numel() == 0:
        return 0, tensor.storage_offset()
    if any(s < 0 for s in tensor.stride()):
        raise WireError("a tensor with negative strides cannot be sent")
    reach = 1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()))
    return reach, tensor.storage_offset()


def span_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The bytes of the storage span `tensor`'s view reaches, as a flat uint8 tensor (a view
    where the dtype allows one, on the tensor's device)."""
    span, offset = storage_span(tensor)
    flat = torch.as_strided(tensor.detach(), (span,), (1,), offset).contiguous()
    return flat.view(torch.uint8) if span else torch.empty(0, dtype=torch.uint8, device=flat.device)


def refill_into(buffer: torch.Tensor, fresh: torch.Tensor) -> None:
    """Copies `fresh`'s storage span into `buffer`'s (same pointers), strides included."""
    span, offset = storage_span(buffer)
    fresh_span, fresh_offset = storage_span(fresh)
    if span != fresh_span or buffer.shape != fresh.shape or buffer.dtype != fresh.dtype:
        raise WireError("an input changed shape, strides or dtype between trials")
    target = torch.as_strided(buffer, (span,), (1,), offset)
    target.copy_(torch.as_strided(fresh, (span,), (1,), fresh_offset))
