"""The messages sent to a model, rendered from `templates/prompts/*.md.j2`.

Two styles. `evolve` (Kernel-Smith-like): a system message with the candidate convention and
every static rule of the evaluator (so no tokens go to banned constructs), and a user message
with the reference, its cases, the parents with their verdicts (per-case errors and times,
roofline, the evaluator's reasons trimmed) and one of five tasks: `seed` (from the reference),
`rewrite` (a full faster file), `diff` (SEARCH/REPLACE blocks), `crossover` (two accepted
parents) and `repair` (a rejected parent and its error). `kernelbench`: the one-shot
instruction KernelBench-trained models such as KernelLLM were tuned on, for pass@k sampling.

The same context gives the same messages, byte for byte: their hash keys the reply cache.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kbot.evaluate.credentials import mask, secret_values
from kbot.problem import ProblemSpec
from kbot.propose.base import Parent

FEEDBACK_LINES = 8
FEEDBACK_CHARS = 700  # per reason: a compiler error's head and tail survive, its middle not


class Mode(str, enum.Enum):
    SEED = "seed"
    REWRITE = "rewrite"
    DIFF = "diff"
    CROSSOVER = "crossover"
    REPAIR = "repair"
    KERNELBENCH = "kernelbench"


@dataclass(frozen=True)
class ParentView:
    label: str
    status: str
    source: str
    details: tuple[str, ...]
    feedback: tuple[str, ...]


def trim(text: str, limit: int = FEEDBACK_CHARS) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    head = limit * 3 // 5
    tail = limit - head
    return f"{text[:head]} [... {len(text) - limit} characters cut ...] {text[-tail:]}"


def parent_view(parent: Parent, label: str) -> ParentView:
    if parent.accepted:
        status = f"accepted, {parent.fitness_text}" if parent.fitness_text else "accepted"
    else:
        status = f"rejected at {parent.stage}" if parent.stage else "rejected"
    return ParentView(
        label=label,
        status=status,
        source=parent.source,
        details=parent.details,
        feedback=tuple(trim(f) for f in parent.feedback[:FEEDBACK_LINES]),
    )


def build_messages(
    mode: Mode, problem: ProblemSpec, parents: tuple[Parent, ...], device: str
) -> tuple[dict[str, str], ...]:
    env = _environment()
    values = _values(problem, parents, device, mode)
    if mode is Mode.KERNELBENCH:
        user = env.get_template("prompts/kernelbench.md.j2").render(**values)
        return ({"role": "user", "content": _clean(user)},)
    system = env.get_template("prompts/evolve_system.md.j2").render(**values)
    user = env.get_template(f"prompts/evolve_{mode.value}.md.j2").render(**values)
    return (
        {"role": "system", "content": _clean(system)},
        {"role": "user", "content": _clean(user)},
    )


def prompt_hash(messages: tuple[dict[str, str], ...], **request: Any) -> str:
    """The reply cache's key: the messages and every request field that changes the reply."""
    body = json.dumps({"messages": messages, **request}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def _values(
    problem: ProblemSpec, parents: tuple[Parent, ...], device: str, mode: Mode
) -> dict[str, Any]:
    from kbot.evaluate.static import RULES, problem_dtype_hint

    options = problem.options
    views = [parent_view(p, f"candidate {chr(ord('A') + i)}") for i, p in enumerate(parents)]
    peaks = sorted({line.split("peak ", 1)[1] for p in parents for line in p.details
                    if "peak " in line})  # fmt: skip
    return {
        "problem": {
            "name": problem.name,
            "source": problem.source,
            "cases": [dict(c) for c in problem.cases],
            "atol": options.atol,
            "rtol": options.rtol,
        },
        "parents": views,
        "device": device,
        "peaks": peaks,
        "rules": sorted(RULES.items()),
        "extern_ops": list(options.extern_ops),
        "fp32_only": problem_dtype_hint(problem.source) == "float32"
        and not options.allow_low_precision,
        "mutates_inputs": options.mutates_inputs,
        "diff": mode is Mode.DIFF,
    }


def _clean(text: str) -> str:
    """No credential of this environment ever reaches a model, whatever a verdict carried."""
    return mask(text.strip() + "\n", secret_values())


@lru_cache(maxsize=1)
def _environment() -> Any:
    from kbot.templates_dir import strict_environment

    return strict_environment()
