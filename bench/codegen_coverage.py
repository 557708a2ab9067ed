"""Which problem files the built-in codegen proposer can write a kernel for, and why not the
others: it traces each file (CPU, seconds a file) and asks codegen for its first variant. No
kernel runs and nothing is timed; whether a variant is correct and fast is the evaluator's and
the GPU's business (`kbot bench kernelbench`).

    python bench/codegen_coverage.py DIR [--extern-ops matmul,conv2d,...]

DIR is a folder of problem files, e.g. a KernelBench checkout's `KernelBench/level1` (read from
outside this tree, never copied into it). `--extern-ops` declares extern ops on every problem,
as `kbot bench kernelbench --extern-ops` does (default: each problem's own `KBOT`).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import io
import sys
from pathlib import Path

# The kbot of this checkout, not an installed copy (a worktree measures its own code).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def coverage(folder: Path, extern_ops: tuple[str, ...] | None) -> dict[str, str]:
    """file name -> "ok" or the reason codegen gives."""
    from kbot.problem import load_problem
    from kbot.propose.codegen import generate

    out: dict[str, str] = {}
    for path in sorted(folder.glob("*.py")):
        try:
            spec = load_problem(path)
            if extern_ops is not None:
                options = dataclasses.replace(spec.options, extern_ops=extern_ops)
                spec = dataclasses.replace(spec, options=options)
            with contextlib.redirect_stdout(io.StringIO()):
                out[path.name] = "ok" if generate(spec, limit=1) else "no variant"
        except Exception as exc:  # the reason is the result
            out[path.name] = " ".join(str(exc).split())[:120] or type(exc).__name__
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--extern-ops", default=None, help="comma-separated extern op names")
    args = parser.parse_args()
    extern = tuple(args.extern_ops.split(",")) if args.extern_ops else None
    found = coverage(args.folder, extern)
    covered = sum(1 for v in found.values() if v == "ok")
    print(f"{covered} of {len(found)} files have a codegen schedule")
    reasons = collections.Counter(v for v in found.values() if v != "ok")
    for reason, count in reasons.most_common():
        print(f"{count:4d}  {reason}")


if __name__ == "__main__":
    main()
