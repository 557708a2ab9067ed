"""`kbot trajectories export`: a chat-format SFT file from the runs' trajectories, keeping the
correctness-preserving, speed-gaining steps (the Kernel-Smith recipe: train on the edits that
kept a kernel correct and made it faster).

One JSON object per line (schema 1, docs/llm.md):

    {"messages": [{"role": "system", ...}, {"role": "user", ...},
                  {"role": "assistant", "content": "```python\\n<child source>```"}],
     "metadata": {"schema": 1, "run_id", "problem", "problem_sha256", "parent_sha256",
                  "child_sha256", "proposer", "mode", "model", "gain", "prompt": "recorded" |
                  "rendered"}}

The system and user messages are the ones the model was sent when the store still has them
(an llm step), otherwise the `evolve` rewrite prompt rendered for the parent (a tune or
codegen step): the model learns to produce the child from the same kind of prompt it gets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.problem.spec import parse_problem
from kbot.propose.base import Parent
from kbot.propose.llm.prompts import Mode, build_messages
from kbot.search.store import Store
from kbot.search.trajectories import FILE_NAME, read_steps

SFT_SCHEMA = 1


@dataclass(frozen=True)
class ExportSummary:
    steps: int  # trajectory steps read
    exported: int
    skipped_not_preserving: int
    skipped_no_gain: int
    skipped_missing_source: int
    runs: int
    out_path: Path


def select(step: dict[str, Any], min_gain: float, include_untimed: bool) -> str | None:
    """Why a step is left out, or None when it is exported."""
    if not step.get("correctness_preserving"):
        return "not_preserving"
    gain = step.get("gain")
    if gain is None:
        return None if include_untimed else "no_gain"
    if not step.get("speed_gaining") or gain < min_gain:
        return "no_gain"
    return None


def trajectory_files(work_dir: Path, run_id: str | None = None) -> list[Path]:
    runs = work_dir / "runs"
    if run_id is not None:
        return [p for p in [runs / run_id / FILE_NAME] if p.is_file()]
    return sorted(runs.glob(f"*/{FILE_NAME}"))


def export(
    work_dir: Path,
    out_path: Path,
    *,
    min_gain: float = 1.0,
    include_untimed: bool = False,
    run_id: str | None = None,
) -> ExportSummary:
    import json

    files = trajectory_files(work_dir, run_id)
    counts = {"not_preserving": 0, "no_gain": 0, "missing": 0}
    steps = exported = 0
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with Store(work_dir / "kbot.sqlite") as store, out_path.open("w", encoding="utf-8") as out:
        for path in files:
            for step in read_steps(path):
                steps += 1
                why = select(step, min_gain, include_untimed)
                if why is not None:
                    counts[why] += 1
                    continue
                example = _example(store, step)
                if example is None:
                    counts["missing"] += 1
                    continue
                out.write(json.dumps(example, sort_keys=True) + "\n")
                exported += 1
    return ExportSummary(steps, exported, counts["not_preserving"], counts["no_gain"],
                         counts["missing"], len(files), out_path)  # fmt: skip


def _example(store: Store, step: dict[str, Any]) -> dict[str, Any] | None:
    parent_source = store.candidate_source(step["parent"]["sha256"])
    child_source = store.candidate_source(step["child"]["sha256"])
    problem_source = store.problem_source(step["problem"]["sha256"])
    if parent_source is None or child_source is None or problem_source is None:
        return None
    recorded = None
    if step.get("prompt_sha256"):
        recorded = store.ledger.messages(step["run_id"], step["prompt_sha256"])
    if recorded:
        prompt, how = list(recorded), "recorded"
    else:
        prompt, how = list(_rendered(step, problem_source, parent_source)), "rendered"
    return {
        "messages": [*prompt, {"role": "assistant", "content": f"```python\n{child_source}```"}],
        "metadata": {
            "schema": SFT_SCHEMA,
            "run_id": step["run_id"],
            "problem": step["problem"]["name"],
            "problem_sha256": step["problem"]["sha256"],
            "parent_sha256": step["parent"]["sha256"],
            "child_sha256": step["child"]["sha256"],
            "proposer": step["proposer"],
            "mode": step.get("mode"),
            "model": step.get("model"),
            "gain": step.get("gain"),
            "prompt": how,
        },
    }


def _rendered(step: dict[str, Any], problem_source: str, parent_source: str) -> Iterator[dict]:
    problem = parse_problem(problem_source, Path(f"{step['problem']['name']}.py"))
    side = step["parent"]
    parent = Parent(
        source=parent_source,
        source_sha256=side["sha256"],
        proposer="",
        accepted=bool(side["accepted"]),
        fitness=side.get("speedup"),
        feedback=tuple(side.get("reasons", ())),
        fitness_text=side.get("fitness", ""),
        stage=side.get("stage", ""),
    )
    device = "cuda" if step.get("gain") is not None else "cpu"
    yield from build_messages(Mode.REWRITE, problem, (parent,), device)
