"""Trajectories for fine-tuning: every parent -> child step of a run, appended as one JSON
line to `<work-dir>/runs/<run_id>/trajectories.jsonl` when the child's verdict arrives.

Each record (schema 1; docs/llm.md has the full description):

    {"schema": 1, "run_id", "problem": {"name", "sha256"}, "generation", "proposer",
     "mode", "model", "prompt_sha256",            # the llm's task and request, else null
     "parent": {"sha256", "accepted", "stage", "speedup", "fitness", "reasons"},
     "child":  {"sha256", "accepted", "stage", "speedup", "fitness", "reasons"},
     "correctness_preserving": bool,              # parent and child both accepted
     "gain": float | null,                        # child speedup / parent speedup (timed only)
     "speed_gaining": bool,                       # gain above both candidates' noise floor
     "diff": "unified diff parent -> child"}

Sources are not repeated here: the store holds them by sha256 (`kbot trajectories export`
reads them). A resumed run appends no step twice.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from kbot.search.archive import Entry

TRAJECTORY_SCHEMA = 1
FILE_NAME = "trajectories.jsonl"


def step_record(run_id: str, problem_name: str, problem_sha256: str, parent: Entry,
                child: Entry) -> dict[str, Any]:  # fmt: skip
    llm = child.params.get("llm") if isinstance(child.params.get("llm"), dict) else {}
    gain = None
    if parent.fitness.speedup and child.fitness.speedup is not None:
        gain = child.fitness.speedup / parent.fitness.speedup
    preserving = parent.fitness.accepted and child.fitness.accepted
    return {
        "schema": TRAJECTORY_SCHEMA,
        "run_id": run_id,
        "problem": {"name": problem_name, "sha256": problem_sha256},
        "generation": child.generation,
        "proposer": child.proposer,
        "mode": llm.get("mode"),
        "model": llm.get("model"),
        "prompt_sha256": llm.get("prompt_sha256"),
        "parent": _side(parent),
        "child": _side(child),
        "correctness_preserving": preserving,
        "gain": gain,
        "speed_gaining": preserving
        and child.fitness.beats(parent.fitness)
        and gain is not None
        and gain > 1.0,
        "diff": "".join(
            difflib.unified_diff(
                parent.source.splitlines(keepends=True),
                child.source.splitlines(keepends=True),
                fromfile=f"{parent.sha256[:12]}.py",
                tofile=f"{child.sha256[:12]}.py",
            )
        ),
    }


def _side(entry: Entry) -> dict[str, Any]:
    return {
        "sha256": entry.sha256,
        "accepted": entry.fitness.accepted,
        "stage": entry.verdict.stage.value,
        "speedup": entry.fitness.speedup,
        "fitness": entry.fitness.describe(),
        "reasons": [str(r) for r in entry.verdict.reasons][:8],
    }


class TrajectoryLog:
    """Appends step records to one run's file; remembers the children already written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written: set[tuple[str, str]] = set()
        if path.is_file():
            for line in path.read_text().splitlines():
                try:
                    record = json.loads(line)
                    self._written.add((record["parent"]["sha256"], record["child"]["sha256"]))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a kill: the step is written again

    def append(self, record: dict[str, Any]) -> None:
        key = (record["parent"]["sha256"], record["child"]["sha256"])
        if key in self._written:
            return
        self._written.add(key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, sort_keys=True) + "\n")


def read_steps(path: Path) -> list[dict[str, Any]]:
    steps = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("schema") == TRAJECTORY_SCHEMA:
            steps.append(record)
    return steps
