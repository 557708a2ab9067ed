"""How fast is static discovery? Generates a 2,000-file Python tree in a temporary folder (op
classes of the three base-class generations, default backends, compiled functions, markers,
and plain modules of ~150 lines) and times `kbot.scan.scan` on it. Target: <= 10 s on 2 cores.

    python bench/scan_speed.py [--files 2000] [--repeat 3] [--parse-all]

Prints the file count, the findings by kind, and the wall time of each repeat and the best.
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import textwrap
import time
from pathlib import Path

from kbot.scan import ScanOptions, scan

_BASES = textwrap.dedent(
    """
    import torch
    from torch import nn


    class CustomOp(nn.Module):
        def forward(self, *args, **kwargs):
            return self.forward_cuda(*args, **kwargs)

        def forward_native(self, *args, **kwargs):
            raise NotImplementedError

        def forward_cuda(self, *args, **kwargs):
            return self.forward_native(*args, **kwargs)


    class MultiPlatformOp(CustomOp):
        pass


    class BaseFusedOp(MultiPlatformOp):
        def forward_triton(self, *args, **kwargs):
            return self.forward_native(*args, **kwargs)
    """
)

_OP = textwrap.dedent(
    """
    class Op{n}({base}):
        def __init__(self, hidden_size: int, eps: float = 1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden_size))
            self.eps = eps

        def forward_native(self, x: torch.Tensor, residual: torch.Tensor | None = None):
            if residual is not None:
                x = x + residual
            h = x.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            return (h * self.weight.float()).to(x.dtype)

        def forward_cuda(self, x, residual=None):
            {cuda}
    """
)

_FUNCTION = textwrap.dedent(
    """
    @torch.compile(dynamic=True)
    def fused_{n}(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(x) * y + {n}


    # kbot: optimize
    def marked_{n}(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * {n}
    """
)

_BACKEND = textwrap.dedent(
    """
    import torch

    from ..base import Norm{n}Impl


    class DefaultNorm{n}Impl(Norm{n}Impl):
        def __init__(self, eps: float = 1e-6):
            self.eps = eps

        def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight
    """
)

_PLAIN = textwrap.dedent(
    """
    class Helper{n}:
        \"\"\"Configuration and bookkeeping, the bulk of any real tree.\"\"\"

        def __init__(self, name: str, size: int = {n}) -> None:
            self.name = name
            self.size = size
            self.items: list[int] = []

        def add(self, value: int) -> None:
            if value < 0:
                raise ValueError(f"negative value {{value}} for {{self.name}}")
            self.items.append(value * self.size)

        def total(self) -> int:
            return sum(self.items) + len(self.name)


    def parse_{n}(text: str) -> dict[str, str]:
        out = {{}}
        for line in text.splitlines():
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
        return out
    """
)


def generate(root: Path, files: int, parse_all: bool = False) -> None:
    """`parse_all` puts a trigger word in every plain module, so no file skips parsing."""
    (root / "pkg" / "backends" / "default").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "base_ops.py").write_text(_BASES)
    for n in range(files - 2):
        kind = n % 8
        if kind in (0, 1):
            base = ("CustomOp", "MultiPlatformOp", "BaseFusedOp")[n % 3]
            cuda = (
                "return self.forward_native(x, residual)" if n % 2 else "return torch.ops.x.norm(x)"
            )
            body = "import torch\nfrom torch import nn\n\nfrom pkg.base_ops import *  # noqa\n"
            body += _OP.format(n=n, base=base, cuda=cuda) + _PLAIN.format(n=n)
        elif kind == 2:
            body = "import torch\n" + _FUNCTION.format(n=n) + _PLAIN.format(n=n)
        elif kind == 3:
            (root / "pkg" / "backends" / "default" / f"norm_{n}.py").write_text(
                _BACKEND.format(n=n)
            )
            continue
        else:
            body = "# no forward_native here\n" if parse_all else ""
            body += "import os\nimport sys\n" + "\n".join(
                _PLAIN.format(n=n * 10 + i) for i in range(4)
            )
        folder = root / "pkg" / f"group_{n // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{n}.py").write_text(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--parse-all",
        action="store_true",
        help="worst case: every file holds a trigger word, so every file is parsed",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbot-scan-speed-") as tmp:
        root = Path(tmp)
        generate(root, args.files, args.parse_all)
        count = sum(1 for _ in root.rglob("*.py"))
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = scan(root, ScanOptions())
            times.append(time.perf_counter() - started)
        kinds = collections.Counter(f.kind.value for f in result.findings)
        print(f"files: {count}")
        print("findings: " + ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())))
        print(
            f"targets: {len(result.targets)}, skipped: {len(result.findings) - len(result.targets)}"
        )
        print("wall time per scan: " + ", ".join(f"{t:.2f} s" for t in times))
        print(f"best: {min(times):.2f} s (target <= 10 s on 2 cores)")


if __name__ == "__main__":
    main()
