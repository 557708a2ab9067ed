"""The SQLite store in the work directory: runs, problems, candidates, verdicts.

Only the search loop writes it, and it commits after every verdict (WAL mode), so a run killed
at any moment loses at most the evaluation in flight. Verdicts are cached under
(candidate sha256, problem sha256, environment key), so nothing is evaluated twice, across runs too.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.errors import KbotError, UsageError
from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec
from kbot.propose.base import Proposal
from kbot.search.codec import verdict_from_text, verdict_to_text
from kbot.search.ledger import ModelLedger

SCHEMA_VERSION = 1

# Verdicts that say nothing about the candidate (Verdict.evaluator_failed: an `evaluator-error`
# or a judge that never started) are never stored as its verdict, and any such row an older
# kbot wrote is not served; a timeout or a crash is the candidate's own and is cached.

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS problems (
    sha256 TEXT PRIMARY KEY, name TEXT NOT NULL, path TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, problem_sha256 TEXT NOT NULL, problem_path TEXT NOT NULL,
    env_key TEXT NOT NULL, options_json TEXT NOT NULL, target_json TEXT,
    status TEXT NOT NULL, stop_reason TEXT, spent_s REAL NOT NULL DEFAULT 0,
    best_sha256 TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS candidates (
    sha256 TEXT PRIMARY KEY, source TEXT NOT NULL, proposer TEXT NOT NULL,
    parents_json TEXT NOT NULL, params_json TEXT NOT NULL, note TEXT NOT NULL,
    created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS run_candidates (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, sha256 TEXT NOT NULL,
    generation INTEGER NOT NULL, island INTEGER NOT NULL, proposer TEXT NOT NULL,
    parents_json TEXT NOT NULL, params_json TEXT NOT NULL, note TEXT NOT NULL,
    PRIMARY KEY (run_id, sha256));
CREATE TABLE IF NOT EXISTS verdicts (
    candidate_sha256 TEXT NOT NULL, problem_sha256 TEXT NOT NULL, env_key TEXT NOT NULL,
    kind TEXT NOT NULL, accepted INTEGER NOT NULL, verdict_json TEXT NOT NULL,
    run_id TEXT NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (candidate_sha256, problem_sha256, env_key, kind));
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, candidate_sha256 TEXT NOT NULL,
    kind TEXT NOT NULL, wall_s REAL NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS generations (
    run_id TEXT NOT NULL, generation INTEGER NOT NULL, best_sha256 TEXT,
    best_fitness_json TEXT, evaluated INTEGER NOT NULL, accepted INTEGER NOT NULL,
    finished_at REAL NOT NULL, PRIMARY KEY (run_id, generation));
"""


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    problem_sha256: str
    problem_path: str
    env_key: str
    options: dict[str, Any]
    target: dict[str, Any] | None
    status: str
    stop_reason: str | None
    spent_s: float
    best_sha256: str | None


@dataclass(frozen=True)
class RunCandidate:
    """A candidate as proposed within one run: where in the search it came from."""

    seq: int
    sha256: str
    source: str
    generation: int
    island: int
    proposer: str
    parents: tuple[str, ...]
    params: dict[str, Any]
    note: str


@dataclass(frozen=True)
class GenerationRecord:
    generation: int
    best_sha256: str | None
    best_fitness: dict[str, Any] | None
    evaluated: int
    accepted: int


class Store:
    """One connection to `<work-dir>/kbot.sqlite`; use as a context manager."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self._db = sqlite3.connect(str(path), timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            self._db.commit()
            # the llm proposer's requests and cached replies (kbot.search.ledger)
            self.ledger = ModelLedger(self._db, path)
        except sqlite3.DatabaseError as exc:
            raise KbotError(f"{path} is not a usable kbot store ({exc}); move it aside") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    # runs and problems

    def put_problem(self, problem: ProblemSpec) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO problems VALUES (?, ?, ?, ?)",
            (problem.source_sha256, problem.name, str(problem.path), problem.source),
        )
        self._db.commit()

    def problem_source(self, sha256: str) -> str | None:
        row = self._db.execute("SELECT source FROM problems WHERE sha256 = ?", (sha256,)).fetchone()
        return row[0] if row else None

    def create_run(
        self,
        run_id: str,
        problem: ProblemSpec,
        env_key: str,
        options: dict[str, Any],
        target: dict[str, Any] | None,
    ) -> None:
        self.put_problem(problem)
        now = time.time()
        self._db.execute(
            "INSERT INTO runs (run_id, problem_sha256, problem_path, env_key, options_json,"
            " target_json, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            (
                run_id,
                problem.source_sha256,
                str(problem.path),
                env_key,
                json.dumps(options, sort_keys=True),
                json.dumps(target) if target is not None else None,
                now,
                now,
            ),
        )
        self._db.commit()

    def run(self, run_id: str) -> RunRecord:
        row = self._db.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            known = [r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY created_at")]
            hint = f"; known runs: {', '.join(known[-5:])}" if known else "; this store has no runs"
            raise UsageError(f"no run {run_id!r} in {self.path}{hint}")
        return _run_record(row)

    def runs_of_problem(self, problem_sha256: str) -> list[RunRecord]:
        """Every run of this problem version, newest first."""
        rows = self._db.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE problem_sha256 = ?"
            " ORDER BY created_at DESC, rowid DESC",
            (problem_sha256,),
        ).fetchall()
        return [_run_record(row) for row in rows]

    def update_run(self, run_id: str, **fields: Any) -> None:
        allowed = {"status", "stop_reason", "spent_s", "best_sha256"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"unknown run fields {sorted(unknown)}")
        assignments = ", ".join(f"{name} = ?" for name in fields)
        self._db.execute(
            f"UPDATE runs SET {assignments}, updated_at = ? WHERE run_id = ?",
            (*fields.values(), time.time(), run_id),
        )
        self._db.commit()

    # candidates

    def record_proposals(
        self, run_id: str, generation: int, placed: list[tuple[int, Proposal]]
    ) -> list[RunCandidate]:
        """Records a generation's proposals (island, proposal) before any is evaluated, so a
        resumed run evaluates the same ones instead of asking the proposers again."""
        now = time.time()
        (next_seq,) = self._db.execute(
            "SELECT COALESCE(MAX(seq), -1) + 1 FROM run_candidates WHERE run_id = ?", (run_id,)
        ).fetchone()
        recorded = []
        for island, proposal in placed:
            sha = proposal.source_sha256
            parents = json.dumps(list(proposal.parent_sha256))
            params = json.dumps(proposal.params, sort_keys=True, default=str)
            self._db.execute(
                "INSERT OR IGNORE INTO candidates VALUES (?, ?, ?, ?, ?, ?, ?)",
                (sha, proposal.source, proposal.proposer, parents, params, proposal.note, now),
            )
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO run_candidates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, next_seq, sha, generation, island, proposal.proposer, parents, params,
                 proposal.note),
            )  # fmt: skip
            if cursor.rowcount:
                recorded.append(
                    RunCandidate(
                        seq=next_seq,
                        sha256=sha,
                        source=proposal.source,
                        generation=generation,
                        island=island,
                        proposer=proposal.proposer,
                        parents=tuple(proposal.parent_sha256),
                        params=json.loads(params),
                        note=proposal.note,
                    )
                )
                next_seq += 1
        self._db.commit()
        return recorded

    def run_candidates(self, run_id: str) -> list[RunCandidate]:
        rows = self._db.execute(
            "SELECT rc.seq, rc.sha256, c.source, rc.generation, rc.island, rc.proposer,"
            " rc.parents_json, rc.params_json, rc.note FROM run_candidates rc"
            " JOIN candidates c ON c.sha256 = rc.sha256 WHERE rc.run_id = ? ORDER BY rc.seq",
            (run_id,),
        )
        return [
            RunCandidate(
                seq=r[0],
                sha256=r[1],
                source=r[2],
                generation=r[3],
                island=r[4],
                proposer=r[5],
                parents=tuple(json.loads(r[6])),
                params=json.loads(r[7]),
                note=r[8],
            )
            for r in rows
        ]

    def candidate_source(self, sha256: str) -> str | None:
        row = self._db.execute(
            "SELECT source FROM candidates WHERE sha256 = ?", (sha256,)
        ).fetchone()
        return row[0] if row else None

    # verdicts

    def cached_verdict(
        self, candidate_sha256: str, problem_sha256: str, env_key: str, kind: str = "eval"
    ) -> Verdict | None:
        row = self._db.execute(
            "SELECT verdict_json FROM verdicts WHERE candidate_sha256 = ? AND problem_sha256 = ?"
            " AND env_key = ? AND kind = ?",
            (candidate_sha256, problem_sha256, env_key, kind),
        ).fetchone()
        if row is None:
            return None
        verdict = verdict_from_text(row[0])
        return None if verdict.evaluator_failed else verdict

    def put_verdict(
        self,
        run_id: str,
        candidate_sha256: str,
        problem_sha256: str,
        env_key: str,
        verdict: Verdict,
        kind: str = "eval",
    ) -> None:
        now = time.time()
        with self._db:  # one transaction: a Ctrl-C between the two leaves neither
            if not verdict.evaluator_failed:  # the evaluator's failure is not the candidate's
                self._db.execute(
                    "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        candidate_sha256,
                        problem_sha256,
                        env_key,
                        kind,
                        int(verdict.accepted),
                        verdict_to_text(verdict),
                        run_id,
                        now,
                    ),
                )
            self._db.execute(
                "INSERT INTO evaluations (run_id, candidate_sha256, kind, wall_s, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (run_id, candidate_sha256, kind, verdict.wall_s, now),
            )

    def evaluation_count(self, run_id: str | None = None, kind: str = "eval") -> int:
        if run_id is None:
            query, args = "SELECT COUNT(*) FROM evaluations WHERE kind = ?", (kind,)
        else:
            query = "SELECT COUNT(*) FROM evaluations WHERE kind = ? AND run_id = ?"
            args = (kind, run_id)
        return self._db.execute(query, args).fetchone()[0]

    def evaluated_candidates(self, run_id: str, kind: str = "eval") -> list[str]:
        """Candidate hashes in the order the evaluator was called for them in this run."""
        rows = self._db.execute(
            "SELECT candidate_sha256 FROM evaluations WHERE run_id = ? AND kind = ? ORDER BY id",
            (run_id, kind),
        )
        return [r[0] for r in rows]

    # generations

    def record_generation(self, run_id: str, record: GenerationRecord) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                record.generation,
                record.best_sha256,
                json.dumps(record.best_fitness) if record.best_fitness is not None else None,
                record.evaluated,
                record.accepted,
                time.time(),
            ),
        )
        self._db.commit()

    def generations(self, run_id: str) -> list[GenerationRecord]:
        rows = self._db.execute(
            "SELECT generation, best_sha256, best_fitness_json, evaluated, accepted"
            " FROM generations WHERE run_id = ? ORDER BY generation",
            (run_id,),
        )
        return [
            GenerationRecord(r[0], r[1], json.loads(r[2]) if r[2] else None, r[3], r[4])
            for r in rows
        ]


_RUN_COLUMNS = (
    "run_id, problem_sha256, problem_path, env_key, options_json, target_json, status,"
    " stop_reason, spent_s, best_sha256"
)


def _run_record(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        run_id=row[0],
        problem_sha256=row[1],
        problem_path=row[2],
        env_key=row[3],
        options=json.loads(row[4]),
        target=json.loads(row[5]) if row[5] else None,
        status=row[6],
        stop_reason=row[7],
        spent_s=row[8],
        best_sha256=row[9],
    )
