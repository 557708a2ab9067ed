"""What `kbot pr` and `kbot run` print: the drafts of a dry run, one line per PR, and the
run's summary table."""

from __future__ import annotations

from dataclasses import dataclass

from kbot.publish.lifecycle import Action
from kbot.publish.publisher import PublishOutcome


@dataclass(frozen=True)
class RunRow:
    """One target of `kbot run`: how far it got and what became of it."""

    target: str  # "file.py::Qualname"
    op: str
    stage: str  # "published" | "optimize" | "extract" | "publish" (where it stopped)
    result: str  # accepted/rejected, the speed claim or "not timed (no GPU)"
    action: str  # an Action value, "skipped" or "failed"
    detail: str  # PR URL, branch, or the one-line reason it stopped
    run_dir: str = ""  # the optimize run directory, when the target got that far
    pr_url: str = ""  # the pull request opened or updated, "" on a dry run or when none was


def outcome_text(outcome: PublishOutcome, title: str = "", body: str = "") -> str:
    lines = [f"{outcome.op}: {outcome.action.value}: {outcome.message}"]
    if outcome.pr_url:
        lines.append(f"  PR: {outcome.pr_url}")
    if outcome.superseded:
        lines.append("  closed as superseded: " + ", ".join(f"#{n}" for n in outcome.superseded))
    lines.append(
        f"  branch {outcome.branch} ({outcome.commit_sha[:12]} on {outcome.base_sha[:12]})"
    )
    lines.append(f"  adapter {outcome.adapter}; files:")
    lines += [f"    {path}" for path in outcome.files]
    lines.append(f"  drafts: {outcome.drafts_dir}")
    if outcome.action == Action.DRY_RUN and title:
        lines += ["", f"Title: {title}", "", body.rstrip()]
    return "\n".join(lines)


def summary_table(rows: list[RunRow]) -> str:
    header = ("target", "op", "result", "publish", "detail")
    cells = [(r.target, r.op, r.result, r.action, r.detail) for r in rows]
    widths = [
        max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(header)
    ]

    # The detail column is the last: left unpadded so long URLs do not widen every row.
    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values[:-1], widths[:-1])) + "  " + values[-1]

    out = [line(header), line(tuple("-" * w for w in widths))]
    out += [line(c) for c in cells]
    return "\n".join(out)
