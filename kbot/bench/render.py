"""The benchmark's report: JSON (`kernelbench.json`), markdown (`kernelbench.md`, from
templates/kernelbench.md.j2) and, where matplotlib is installed, a PNG of the speedups."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any

from kbot.bench.metrics import Summary
from kbot.bench.records import ProblemResult
from kbot.evaluate.verdict import NOT_MEASURED

REPORT_SCHEMA = 1
BASELINE_LABELS = (
    ("best", "the faster of eager and torch.compile"),
    ("eager", "eager"),
    ("compile", "torch.compile"),
)


def git_commit(folder: Path) -> str:
    """The KernelBench checkout's commit, or "unknown": not a git checkout, no git, or files
    copied into some other repository (whose commit would say nothing about KernelBench)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2:
        return "unknown"
    top, commit = Path(lines[0]).resolve(), lines[1]
    here = folder.resolve()
    # `--root` names the checkout or its KernelBench/ folder (kbot.bench.kernelbench.suite_dir).
    return commit if top in (here, here.parent) else "unknown"


def build_report(
    settings: dict[str, Any],
    rows: list[ProblemResult],
    summary: Summary,
    device: str,
    timed: bool,
    commit: str,
) -> dict[str, Any]:
    return {
        "schema": REPORT_SCHEMA,
        "suite": "KernelBench",
        "kernelbench_commit": commit,
        "device": device,
        "timed": timed,
        "settings": settings,
        "summary": dataclasses.asdict(summary),
        "problems": [{**row.to_json(), "key": row.key} for row in rows],
        "baselines": [list(pair) for pair in BASELINE_LABELS],
        "plot": None,
    }


def _x(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{value:.2f}x"


def _share(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{100 * value:.1f}%"


def _percent(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{100 * value:.0f}%"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "—"


def render_markdown(report: dict[str, Any]) -> str:
    from kbot.templates_dir import strict_environment

    env = strict_environment()
    env.filters.update(x=_x, share=_share, percent=_percent, cell=_cell)
    return env.get_template("kernelbench.md.j2").render(r=report)


def plot_speedups(rows: list[ProblemResult], path: Path) -> str | None:
    """A histogram of the speedups vs the faster baseline (log scale); None when there is no
    timed problem, or matplotlib (an optional extra: `pip install kbot[plot]`) is missing."""
    values = [r.speedup_vs_best for r in rows if r.correct and r.speedup_vs_best is not None]
    if not values:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import math

    fig, ax = plt.subplots(figsize=(7, 4))
    logs = [math.log2(v) for v in values]
    ax.hist(logs, bins=min(30, max(5, len(values))), color="#4c72b0")
    ax.axvline(0.0, color="black", linewidth=1)
    ax.set_xlabel("log2 speedup vs the faster of eager and torch.compile")
    ax.set_ylabel("problems")
    ax.set_title(f"kbot on KernelBench: {len(values)} correct, timed problems")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name
