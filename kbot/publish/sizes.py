"""The PR body's "which kernel serves which size" section, from report.json's `by_size`
(kbot.search.by_size): a row per case naming the candidate that serves it, or the original
path where that was faster, and the µs-per-size chart as Mermaid, which GitHub renders."""

from __future__ import annotations

from typing import Any

from kbot.search.chart import legend, mermaid
from kbot.search.fallback import fallback_sentence


def by_size_context(report: dict[str, Any]) -> dict[str, Any] | None:
    """None when there is nothing to say: one candidate at every size and no timing."""
    by_size = report.get("by_size")
    if not isinstance(by_size, dict) or not by_size.get("cases"):
        return None
    chart = by_size.get("chart")
    fallback = by_size.get("fallback")
    if not by_size.get("composed") and not chart and not fallback:
        return None
    variants = by_size.get("variants") or []
    if by_size.get("composed"):
        summary = (
            f"The kernel module dispatches by size (`{by_size['size']}`) to {len(variants)} "
            "kernels, each the fastest kbot measured at the sizes it serves. "
            + str(by_size.get("rule", ""))
        )
    else:
        summary = "One kernel serves every size" + (" measured." if fallback else ".")
    if isinstance(fallback, dict):
        summary += " " + fallback_sentence(fallback)
    condition = by_size.get("kernel_condition")
    if condition:
        where = str(by_size.get("compiled_by") or "")
        why = (
            where  # kbot.scan.compiled_context: "file:line (who calls what)"
            if "(" in where
            else "under `@torch.compile`, or inside a model or step function the repository "
            "compiles whole" + (f" ({where})" if where else "")
        )
        replaced = (
            f"torch.compile (the op runs compiled: {why})"
            if by_size.get("original_path") == "torch.compile"
            else "the original code"
        )
        summary += (
            f" At some sizes the kernel was not faster than {replaced}{_by_gain(by_size)}, so the "
            f"integration runs it only when `{condition}` and keeps the original path elsewhere."
        )
    rows = [
        {
            "label": c["label"],
            "served_by": (
                "original code"
                if c["path"] == "original"
                else f"{c['variant']} (`{c['sha256'][:12]}`, {c['proposer']})"
            ),
            "kbot_us": c.get("kbot_us"),
            "compile_us": c.get("compile_us"),
            "eager_us": c.get("eager_us"),
        }
        for c in by_size["cases"]
    ]
    return {
        "summary": summary,
        "rows": rows,
        "mermaid": mermaid(chart) if chart else "",
        "legend": legend(chart) if chart else "",
    }


def _by_gain(by_size: dict[str, Any]) -> str:
    """` by at least 2%`: the least gain that sends a size to the kernel, where the report
    names one (kbot.search.by_size.MIN_GAIN)."""
    gain = by_size.get("min_gain")
    return f" by at least {gain:.0%}" if isinstance(gain, (int, float)) and gain > 0 else ""
