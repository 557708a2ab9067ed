"""One problem's outcome in a benchmark run, and the results log it is appended to.

The log (`<work-dir>/kernelbench.jsonl`) gets a settings line first, then one line per problem
as it starts (with its optimize run's id) and one as it finishes, so a run killed midway is
continued by `--resume`: finished problems are never run again, and a problem that was under
way resumes its own optimize run (its store keeps the verdicts it had).
"""

from __future__ import annotations

import enum
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kbot.errors import UsageError

LOG_SCHEMA = 1


class Status(str, enum.Enum):
    ACCEPTED = "accepted"  # a candidate passed the evaluator
    REJECTED = "rejected"  # candidates were evaluated, none passed
    NO_SCHEDULE = "no_schedule"  # no proposer offered a candidate
    TIMEOUT = "timeout"  # the budget ran out before any candidate was evaluated
    SKIPPED = "skipped"  # not run: the inputs do not fit the machine
    ERROR = "error"  # the problem file or kbot itself failed


@dataclass(frozen=True)
class ProblemResult:
    level: int
    number: int
    name: str
    path: str
    sha256: str
    status: Status
    # the failure class, one line ("rejected: correctness: [mismatch]"); "" when accepted
    failure: str
    message: str  # the optimize run's own message, or the skip/error reason
    run_id: str | None
    timed: bool
    # geomeans over the winner's timed cases; None when not timed (a CPU) or not accepted
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    speedup_vs_best: float | None  # vs the faster of eager and torch.compile, per case
    roofline_fraction: float | None
    candidates: int
    accepted_candidates: int
    elapsed_s: float
    best_candidate: str | None

    @property
    def key(self) -> str:
        return f"L{self.level}/{self.number}"

    @property
    def correct(self) -> bool:
        return self.status is Status.ACCEPTED

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        for name in ("speedup_vs_eager", "speedup_vs_compile", "speedup_vs_best"):
            value = data[name]
            data[name] = None if value is None or not math.isfinite(value) else value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProblemResult:
        fields = dict(data)
        fields["status"] = Status(fields["status"])
        return cls(**fields)


class ResultsLog:
    """Append-only JSON lines; every line is flushed and fsynced as it is written."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def _append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def start(self, settings: dict[str, Any]) -> None:
        self._append({"event": "settings", "schema": LOG_SCHEMA, "settings": settings})

    def started(self, key: str, sha256: str, run_id: str) -> None:
        self._append({"event": "started", "key": key, "sha256": sha256, "run_id": run_id})

    def finished(self, result: ProblemResult) -> None:
        self._append({"event": "finished", "key": result.key, "result": result.to_json()})

    def read(self) -> tuple[dict[str, Any] | None, dict[str, ProblemResult], dict[str, str]]:
        """(settings, finished results by key, run ids of problems started but not finished).
        A torn last line (the process was killed while writing it) is ignored."""
        settings: dict[str, Any] | None = None
        finished: dict[str, ProblemResult] = {}
        started: dict[str, str] = {}
        if not self.path.is_file():
            return None, finished, started
        for number, line in enumerate(self.path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # the line a kill cut short
            event = record.get("event")
            if event == "settings":
                if record.get("schema") != LOG_SCHEMA:
                    raise UsageError(
                        f"{self.path}:{number}: written by another kbot (schema "
                        f"{record.get('schema')}); use a new --work-dir"
                    )
                settings = record["settings"]
            elif event == "started":
                started[record["key"]] = record["run_id"]
            elif event == "finished":
                result = ProblemResult.from_json(record["result"])
                finished[result.key] = result
                started.pop(result.key, None)
        return settings, finished, started
