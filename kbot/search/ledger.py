"""The model ledger in the run's SQLite store: every request the llm proposer made (tokens,
USD, status) and the replies it got, cached by (run, prompt hash) so that a resumed run sends
no request it already paid for. Written by the search loop only, after each proposer call.

Tables (beside those in `kbot.search.store`):

| table | what |
|---|---|
| `llm_replies` | (run id, prompt sha256) -> model, endpoint, messages, reply text, finish reason |
| `llm_calls` | one row per request: generation, model, task, status, message, cached, tokens, USD, attempts, wall time, candidate |
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from kbot.evaluate.credentials import mask, public_url, secret_values
from kbot.propose.base import ModelCall

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_replies (
    run_id TEXT NOT NULL, prompt_sha256 TEXT NOT NULL, model TEXT NOT NULL,
    base_url TEXT NOT NULL, messages_json TEXT NOT NULL, reply TEXT NOT NULL,
    finish_reason TEXT, created_at REAL NOT NULL, PRIMARY KEY (run_id, prompt_sha256));
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, generation INTEGER NOT NULL,
    prompt_sha256 TEXT NOT NULL, model TEXT NOT NULL, mode TEXT NOT NULL, status TEXT NOT NULL,
    message TEXT NOT NULL, cached INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, usd REAL NOT NULL, attempts INTEGER NOT NULL,
    wall_s REAL NOT NULL, candidate_sha256 TEXT, created_at REAL NOT NULL);
"""


@dataclass(frozen=True)
class ModelUsage:
    """What the model calls of a run (or of every run of one problem) cost."""

    calls: int = 0  # requests planned, including those answered from the cache
    paid_calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0
    candidates: int = 0  # calls that gave a candidate
    by_status: tuple[tuple[str, int], ...] = ()
    by_model: tuple[tuple[str, int, int, float], ...] = ()  # model, calls, tokens, usd

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ModelLedger:
    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = path
        self._db.executescript(_SCHEMA)
        self._db.commit()

    def record(self, run_id: str, generation: int, calls: Iterable[ModelCall]) -> None:
        """One transaction per proposer call: its ledger rows and the replies worth caching,
        with every credential's value masked (a model may echo a key it saw)."""
        now = time.time()
        secrets = secret_values()
        with self._db:
            for call in calls:
                self._db.execute(
                    "INSERT INTO llm_calls (run_id, generation, prompt_sha256, model, mode, status,"
                    " message, cached, prompt_tokens, completion_tokens, usd, attempts, wall_s,"
                    " candidate_sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, generation, call.prompt_sha256, call.model, call.mode, call.status,
                     mask(call.message, secrets), int(call.cached), call.prompt_tokens, call.completion_tokens,
                     call.usd, call.attempts, call.wall_s, call.candidate_sha256, now),
                )  # fmt: skip
                if call.answered and not call.cached:
                    self._db.execute(
                        "INSERT OR IGNORE INTO llm_replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (run_id, call.prompt_sha256, call.model, public_url(call.base_url) or "",
                         json.dumps(call.messages), mask(call.reply, secrets), call.finish_reason,
                         now),
                    )  # fmt: skip

    def for_run(self, run_id: str) -> RunReplies:
        return RunReplies(self._path, run_id)

    def messages(self, run_id: str, prompt_sha256: str) -> tuple[dict[str, str], ...] | None:
        row = self._db.execute(
            "SELECT messages_json FROM llm_replies WHERE run_id = ? AND prompt_sha256 = ?",
            (run_id, prompt_sha256),
        ).fetchone()
        return tuple(json.loads(row[0])) if row else None

    def usage(self, run_id: str | None = None, problem_sha256: str | None = None) -> ModelUsage:
        """Totals for one run, or for every run of one problem (the cost per op)."""
        if run_id is not None:
            where, args = "run_id = ?", (run_id,)
        elif problem_sha256 is not None:
            where = "run_id IN (SELECT run_id FROM runs WHERE problem_sha256 = ?)"
            args = (problem_sha256,)
        else:
            where, args = "1", ()
        row = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(1 - cached), 0), COALESCE(SUM(cached), 0),"
            " COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
            " COALESCE(SUM(usd), 0), COUNT(candidate_sha256)"
            f" FROM llm_calls WHERE {where} AND status != 'budget'",
            args,
        ).fetchone()
        statuses = self._db.execute(
            f"SELECT status, COUNT(*) FROM llm_calls WHERE {where} GROUP BY status ORDER BY status",
            args,
        ).fetchall()
        models = self._db.execute(
            "SELECT model, COUNT(*), SUM(prompt_tokens + completion_tokens), SUM(usd)"
            f" FROM llm_calls WHERE {where} AND status != 'budget' GROUP BY model ORDER BY model",
            args,
        ).fetchall()
        return ModelUsage(
            calls=row[0], paid_calls=row[1], cached_calls=row[2], prompt_tokens=row[3],
            completion_tokens=row[4], usd=row[5], candidates=row[6],
            by_status=tuple((s, n) for s, n in statuses),
            by_model=tuple((m, n, int(t or 0), float(u or 0.0)) for m, n, t, u in models),
        )  # fmt: skip


class RunReplies:
    """The `ReplyLookup` a proposer gets: this run's cached replies, read-only. Proposers run in
    a thread of their own (the loop bounds them by the time budget), so each lookup opens its
    own connection (WAL: readers never wait for the loop's writes)."""

    def __init__(self, path: Path, run_id: str) -> None:
        self._path = path
        self._run_id = run_id

    def reply(self, prompt_sha256: str) -> tuple[str, str | None] | None:
        with closing(sqlite3.connect(str(self._path), timeout=30.0)) as db:
            row = db.execute(
                "SELECT reply, finish_reason FROM llm_replies"
                " WHERE run_id = ? AND prompt_sha256 = ?",
                (self._run_id, prompt_sha256),
            ).fetchone()
        return (row[0], row[1]) if row else None
