"""Where a candidate's process spends its start-up: `kbot.evaluate.remote.CandidateProcess`
launched and waited for, in namespaces and plain, one at a time and three at once (the judge
starts up to three ahead on a GPU host, kbot.evaluate.host_pool). Each process reports its own
phases in its ready message (import of torch and Triton, the warm-up kernel, the total).

    python bench/startup_cost.py [--device cuda|cpu] [--repeats 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from kbot.evaluate.confine import Sandbox, probe  # noqa: E402
from kbot.evaluate.remote import CandidateProcess  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", choices=("cpu", "cuda"))
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    device = torch.device(args.device)
    root = Path(tempfile.mkdtemp(prefix="kbot-startup-"))
    print(f"namespaces: {probe()}")
    print("| processes | at once | wall s (each round) | import s | warm-up s | total s |")
    print("|---|---|---|---|---|---|")
    for confined in (True, False):
        for at_once in (1, 3):
            walls, phases = [], []
            for round_ in range(args.repeats):
                hosts = [
                    CandidateProcess(
                        root / f"{int(confined)}-{at_once}-{round_}-{i}", device, Sandbox(confined)
                    )
                    for i in range(at_once)
                ]
                started = time.monotonic()
                for host in hosts:
                    host.launch()
                for host in hosts:
                    host.wait_ready()
                walls.append(time.monotonic() - started)
                phases += [host.startup for host in hosts]
                for host in hosts:
                    host.close()

            def median(key: str, phases: list = phases) -> str:
                return f"{statistics.median(p.get(key, float('nan')) for p in phases):.2f}"

            label = "in namespaces" if confined else "plain"
            print(
                f"| {label} | {at_once} | {', '.join(f'{w:.2f}' for w in walls)} | "
                f"{median('import_s')} | {median('warm_up_s')} | {median('total_s')} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
