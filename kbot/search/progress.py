"""Live progress of a search: a rich panel on a terminal, one line per generation otherwise,
JSON lines (on stderr, so `--json`'s envelope on stdout stays parseable) for machines."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TextIO


@dataclass(frozen=True)
class Snapshot:
    """Where the search stands after one verdict."""

    generation: int
    generations: int
    evaluated: int
    accepted: int
    best_speedup: float | None
    best_roofline_fraction: float | None
    best_fitness: str
    eta_s: float | None
    elapsed_s: float
    last_sha256: str
    last_proposer: str
    last_accepted: bool
    tokens: int = 0  # model tokens paid for by this run so far
    usd: float = 0.0


class Progress(Protocol):
    def started(self, run_id: str, problem: str, device: str) -> None: ...
    def generation_started(self, generation: int, generations: int) -> None: ...
    def verdict(self, snapshot: Snapshot) -> None: ...
    def note(self, text: str) -> None: ...
    def finished(self, summary: str) -> None: ...


class NullProgress:
    def started(self, run_id: str, problem: str, device: str) -> None:
        pass

    def generation_started(self, generation: int, generations: int) -> None:
        pass

    def verdict(self, snapshot: Snapshot) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def finished(self, summary: str) -> None:
        pass


class JsonLinesProgress:
    """One JSON object per event: {"event": ..., "t": unix time, ...}."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr

    def _emit(self, event: str, **fields: Any) -> None:
        self.stream.write(json.dumps({"event": event, "t": round(time.time(), 3), **fields}) + "\n")
        self.stream.flush()

    def started(self, run_id: str, problem: str, device: str) -> None:
        self._emit("started", run_id=run_id, problem=problem, device=device)

    def generation_started(self, generation: int, generations: int) -> None:
        self._emit("generation", generation=generation, generations=generations)

    def verdict(self, snapshot: Snapshot) -> None:
        self._emit("verdict", **asdict(snapshot))

    def note(self, text: str) -> None:
        self._emit("note", text=text)

    def finished(self, summary: str) -> None:
        self._emit("finished", summary=summary)


class LineProgress:
    """Plain text for logs: a line per generation and per note."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self._last: Snapshot | None = None

    def _say(self, text: str) -> None:
        print(f"kbot optimize: {text}", file=self.stream, flush=True)

    def started(self, run_id: str, problem: str, device: str) -> None:
        self._say(f"run {run_id}: {problem} on {device}")

    def generation_started(self, generation: int, generations: int) -> None:
        if self._last is not None:
            self._say(_line(self._last))
        self._say(f"generation {generation + 1}/{generations}")

    def verdict(self, snapshot: Snapshot) -> None:
        self._last = snapshot

    def note(self, text: str) -> None:
        self._say(text)

    def finished(self, summary: str) -> None:
        if self._last is not None:
            self._say(_line(self._last))
        self._say(summary)


class RichProgress:
    """A live panel on a terminal: generation, evaluated, accepted, best, roofline, ETA."""

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.live import Live

        self._console = console or Console(stderr=True)
        self._live = Live(console=self._console, refresh_per_second=4, transient=False)
        self._title = ""
        self._generation = (0, 1)

    def started(self, run_id: str, problem: str, device: str) -> None:
        self._title = f"kbot optimize {problem} · {device} · run {run_id}"
        self._live.start()

    def generation_started(self, generation: int, generations: int) -> None:
        self._generation = (generation, generations)

    def verdict(self, snapshot: Snapshot) -> None:
        from rich.table import Table

        table = Table(title=self._title, show_header=True)
        columns = ["generation", "evaluated", "accepted", "best", "roofline", "ETA"]
        row = [
            f"{snapshot.generation + 1}/{snapshot.generations}",
            str(snapshot.evaluated),
            str(snapshot.accepted),
            snapshot.best_fitness,
            _percent(snapshot.best_roofline_fraction),
            _duration(snapshot.eta_s),
        ]
        if snapshot.tokens or snapshot.usd:
            columns.append("llm")
            row.append(f"{snapshot.tokens} tok ${snapshot.usd:.4f}")
        for column in columns:
            table.add_column(column)
        table.add_row(*row)
        self._live.update(table)

    def note(self, text: str) -> None:
        # messages quote rule names like "[mismatch]": never read them as rich markup
        self._console.print(text, style="dim", markup=False, highlight=False)

    def finished(self, summary: str) -> None:
        self._live.stop()
        self._console.print(summary, markup=False, highlight=False)


def progress_for(json_mode: bool, stream: TextIO | None = None) -> Progress:
    stream = stream or sys.stderr
    if json_mode:
        return JsonLinesProgress(stream)
    if stream.isatty():
        return RichProgress()
    return LineProgress(stream)


def _line(s: Snapshot) -> str:
    return (
        f"  evaluated {s.evaluated}, accepted {s.accepted}, best {s.best_fitness}, "
        f"roofline {_percent(s.best_roofline_fraction)}, ETA {_duration(s.eta_s)}" + _spend(s)
    )


def _spend(s: Snapshot) -> str:
    """Model spending, once there is some (runs without the llm proposer show none)."""
    return f", llm {s.tokens} tokens ${s.usd:.4f}" if s.tokens or s.usd else ""


def _percent(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{100 * fraction:.0f}%"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"
