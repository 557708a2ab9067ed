"""What one crossing of a large tensor between the judge and a candidate's process costs, and
which part of it (GPU or CPU; `--device`).

A correctness trial moves each case's inputs to the candidate's process, and its outputs and
its inputs back, as payload files (kbot.evaluate.wire): on the H100, softmax_64k's 16384 x 65536
bf16 case (2 GiB in, 2 GiB out) spent 28 s of its 33 s of trials in those calls
(bench/results/optimize.md, 2026-12-06 11:11 UTC). This times, for one tensor of --gib GiB,
each step of the path the judge takes today and two alternatives:

    today         wire.Outbox (device -> pinned host -> file), then wire.decode (file ->
                  pinned host -> device), a fresh file each time (as each request's)
    reused file   the same bytes written over one file that stays (no page allocation)
    threads N     the file written and read in N slices by N threads (os.pwrite/os.preadv)

in FOLDER (default: the temp folder the evaluator uses; try /dev/shm too), --repeats times each,
printing the median of each step in seconds and GB/s.

    python bench/wire_cost.py --gib 2 --device cuda --folder /tmp --threads 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--folder", default=tempfile.gettempdir())
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch

    from kbot.evaluate import wire

    device = torch.device(args.device)
    nbytes = int(args.gib * (1 << 30)) // 2 * 2
    tensor = torch.randn(nbytes // 2, dtype=torch.bfloat16, device=device)
    folder = Path(tempfile.mkdtemp(prefix="wire-cost-", dir=args.folder))
    rows: dict[str, list[float]] = {}

    def timed(name: str, step) -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        began = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        rows.setdefault(name, []).append(time.perf_counter() - began)

    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=device.type == "cuda")
    back = torch.empty(nbytes, dtype=torch.uint8, pin_memory=device.type == "cuda")
    kept = folder / "kept.bin"
    n = args.threads
    for repeat in range(args.repeats):
        path = folder / f"fresh-{repeat}.bin"
        state: dict = {}

        def encode(path=path, state=state):
            outbox = wire.Outbox.at(path)
            state["json"] = wire.encode([tensor], outbox)
            state["payload"] = outbox.write()

        timed("today: encode + write (device -> file)", encode)
        timed(
            "today: decode (file -> device)",
            lambda state=state: state.setdefault(
                "out", wire.decode(state["json"], state["payload"], device)
            ),
        )
        assert torch.equal(state["out"][0].view(-1), tensor)
        os.unlink(path)
        timed("device -> pinned host", lambda: host.copy_(tensor.view(torch.uint8)))
        timed("pinned host -> device", lambda: tensor.view(torch.uint8).copy_(host))
        timed("fresh file: write", lambda path=path: _write(path, host, 1, truncate=True))
        timed("fresh file: read", lambda path=path: _read(path, back, 1))
        os.unlink(path)
        timed("reused file: write", lambda: _write(kept, host, 1, truncate=False))
        timed("reused file: read", lambda: _read(kept, back, 1))
        timed(f"reused file, {n} threads: write", lambda: _write(kept, host, n, truncate=False))
        timed(f"reused file, {n} threads: read", lambda: _read(kept, back, n))
        timed(f"fresh file, {n} threads: write", lambda path=path: _write(path, host, n, True))
        timed(f"fresh file, {n} threads: read", lambda path=path: _read(path, back, n))
        os.unlink(path)
        assert torch.equal(back, host)
    kept.unlink()
    folder.rmdir()
    print(f"{args.gib} GiB, {device}, folder {args.folder}, medians of {args.repeats}:")
    for name, seconds in rows.items():
        median = statistics.median(seconds)
        print(f"  {name:48s} {median:7.3f} s  {nbytes / median / 1e9:6.1f} GB/s")
    return 0


def _slices(total: int, parts: int) -> list[tuple[int, int]]:
    step = -(-total // parts)
    return [(lo, min(total, lo + step)) for lo in range(0, total, step)]


def _write(path: Path, data, threads: int, truncate: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else 0)
    fd = os.open(path, flags, 0o600)
    view = memoryview(data.numpy())

    def one(span: tuple[int, int]) -> None:
        at, end = span
        while at < end:
            at += os.pwrite(fd, view[at:end], at)

    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, _slices(len(view), threads)))
    finally:
        os.close(fd)


def _read(path: Path, data, threads: int) -> None:
    fd = os.open(path, os.O_RDONLY)
    view = memoryview(data.numpy())

    def one(span: tuple[int, int]) -> None:
        at, end = span
        while at < end:
            got = os.preadv(fd, [view[at:end]], at)
            if got == 0:
                raise OSError("short read")
            at += got

    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, _slices(len(view), threads)))
    finally:
        os.close(fd)


if __name__ == "__main__":
    raise SystemExit(main())
