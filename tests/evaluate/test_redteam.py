"""The red team (issue 12, item 7): every cheat in `tests/evaluate/redteam/` goes through the
evaluator on the CPU. Each must be rejected with a named rule, or, where it cannot change a
verdict, be harmless. No cheat may leave a file or a packet behind, change the verdict of the
candidate after it, or get a canary credential out through a verdict, a file, a packet or a
printout.

Some runs switch the static rules off (`kbot.evaluate.evaluator.check_source` made to pass
everything). The static rules are only the cheap first filter; the isolation has to hold
without them, and a canary test that only runs candidates the static rules already rejected
would prove nothing about the sandbox.

Each cheat file starts with a docstring:

    EXPECT: rejected | harmless
    One sentence on the attack.

    PROBLEM: <a file in tests/evaluate/problems/>
    CLASS: reach | secrets | judge | seed | outside | timing | control
    TAGS: any of
      steals   looks for the canary and tries to get it out (run by the canary test)
      isolate  patches state that outlives it: evaluated in an evaluator of its own, followed
               there by the plainly wrong control, which must still be rejected
      honest   its kernel computes the right answer itself; the attack is a side effect
      cpu      rejected by a check of the CPU interpreter's (bounds, the autotuner's configs in
               turn): on a GPU it is contained but may be accepted (a gap written down in
               bench/results/evaluator.md)
      guarded  wrong only where the published guard never takes the kernel (another default
               dtype: kbot.publish.guard): rejected by the static rules; with them off the
               judge's trials do not meet its wrong path, so it may be accepted there
      static   wrong only in a call no trial can make (the autotuner's tuning call, where it
               runs every config on the caller's buffers): rejected by the static rules alone

Cheats only create files named /tmp/kbot-redteam-cheat-* (removed here), only talk to
127.0.0.1 on the ports below, and only run `id`. Whatever they find, they print or send only
if it holds the canary's prefix, so no real credential of the machine running this reaches a
log.

Set KBOT_REDTEAM_REPORT=path.md to write the table of verdicts. Measured on 2 cores shared
with other work (load average 3.5 to 6): 3 min 6 s against the evaluator of commit f5b0303, and
9 min 26 s against the sandboxed redesign in progress on 2026-12-01, where every candidate that
runs costs 5 to 8 s (about 60 of them run here: the static rules stop the rest).
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kbot
from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem

HERE = Path(__file__).parent
REDTEAM = HERE / "redteam"
PROBLEMS = HERE / "problems"
CONTROL = "control_plain_wrong"  # plainly wrong: what a surviving patch would let through
UDP_PORT, TCP_PORT = 47391, 47392  # where the network cheats send
ARTIFACT_PREFIX = "kbot-redteam-cheat-"  # the only file names the cheats create
CANARY_PREFIX = "kbot-canary-"  # the only values the cheats print or send
NAMED_RULE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
OUTPUT_BOUND = 10_000  # characters of worker output a verdict may carry (4000 today)
CLASSES = ("reach", "secrets", "judge", "seed", "outside", "timing", "control")
TAGS = frozenset({"steals", "isolate", "honest", "cpu", "guarded", "static"})
# KBOT_REDTEAM_DEVICE=cuda runs the same suite on a GPU (the H200 run in bench/results).
OPTIONS = dict(
    device=os.environ.get("KBOT_REDTEAM_DEVICE", "cpu"),
    timeout_s=60.0,
    compile_baselines=False,
    timing_budget_s=0.2,
)
# Where the evaluator's static rules are looked up when a candidate is checked.
STATIC_MODULE, STATIC_NAME = "kbot.evaluate.evaluator", "check_source"


@dataclass(frozen=True)
class Cheat:
    name: str
    expect: str  # "rejected" or "harmless"
    attack: str
    problem: str
    klass: str
    tags: frozenset[str]
    source: str

    def __str__(self) -> str:
        return self.name

    @property
    def design_must_reject(self) -> bool:
        """Rejected even with the static rules off: the answer is wrong, stolen from the judge
        or precomputed from a predicted seed, or computed by torch outside a kernel (the
        candidate process's compute guard sees what runs), and only the trusted side's checks
        stand."""
        return self.klass in ("judge", "seed", "control", "outside") and not (
            self.tags & {"honest", "guarded", "static"}
        )


def _parse(path: Path) -> Cheat:
    source = path.read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(source)) or ""
    lines = doc.splitlines()
    head = re.fullmatch(r"EXPECT: (rejected|harmless)", lines[0].strip()) if lines else None
    fields = dict(re.findall(r"^(PROBLEM|CLASS|TAGS): *(.*)$", doc, re.M))
    attack = " ".join(line.strip() for line in lines[1:] if line.strip()).split("PROBLEM:")[0]
    return Cheat(
        name=path.stem,
        expect=head.group(1) if head else "",
        attack=attack.strip(),
        problem=fields.get("PROBLEM", "").strip(),
        klass=fields.get("CLASS", "").strip(),
        tags=frozenset(t.strip() for t in fields.get("TAGS", "").split(",") if t.strip()),
        source=source,
    )


CHEATS = [_parse(p) for p in sorted(REDTEAM.glob("*.py"))]
BY_NAME = {c.name: c for c in CHEATS}
ISOLATED = [c for c in CHEATS if "isolate" in c.tags]
STEALERS = [c for c in CHEATS if "steals" in c.tags and "isolate" not in c.tags]
# With the static rules off, what the design must stop: the "outside" cheats too, since the
# compute guard in the candidate's process sees torch computing whatever route reached it;
# not the reach cheats that compute in PyTorch, which only the static rules can see. The
# stealers run with the static rules off in the canary test, which holds them to the same
# containment.
DESIGN = [c for c in CHEATS if (c.klass != "reach" or "honest" in c.tags) and c not in STEALERS]


def _problem(name: str):
    return load_problem(PROBLEMS / f"{name}.py")


def _static_module():
    """The module whose `check_source` the evaluator calls, or None if it has none."""
    import importlib

    module = importlib.import_module(STATIC_MODULE)
    return module if hasattr(module, STATIC_NAME) else None


@contextmanager
def static_rules(on: bool):
    """Leaves the static rules alone (on) or makes them pass every candidate (off)."""
    module = None if on else _static_module()
    if module is None:
        yield
        return
    saved = getattr(module, STATIC_NAME)
    setattr(module, STATIC_NAME, lambda *args, **kwargs: ())
    try:
        yield
    finally:
        setattr(module, STATIC_NAME, saved)


def _artifacts() -> set[Path]:
    folders = {Path("/tmp"), Path(tempfile.gettempdir()), Path.home()}
    return {p for folder in folders for p in folder.glob(f"{ARTIFACT_PREFIX}*")}


def _remove_artifacts() -> None:
    for path in _artifacts():
        if path.is_file() and not path.is_symlink():
            path.unlink()


class Listener:
    """UDP and TCP sockets on 127.0.0.1 where the network cheats send; what arrives is drained
    after each evaluation and blamed on the candidate just evaluated."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self._received: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.udp = self._bind(socket.SOCK_DGRAM, UDP_PORT)
        self.tcp = self._bind(socket.SOCK_STREAM, TCP_PORT)
        if self.udp is not None:
            self.udp.setblocking(False)
        if self.tcp is not None:
            self.tcp.listen(8)
            self.tcp.settimeout(0.2)
            threading.Thread(target=self._accept, daemon=True).start()

    def _bind(self, kind: int, port: int) -> socket.socket | None:
        sock = socket.socket(socket.AF_INET, kind)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:  # the port is taken: the cheats' packets cannot be observed
            sock.close()
            self.notes.append(f"could not listen on 127.0.0.1:{port} ({exc})")
            return None
        return sock

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.tcp.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(1.0)
            chunks = []
            try:
                while chunk := conn.recv(65536):
                    chunks.append(chunk)
            except OSError:
                pass
            conn.close()
            with self._lock:
                self._received.append(b"tcp:" + b"".join(chunks))

    def drain(self) -> list[bytes]:
        time.sleep(0.05)  # a datagram sent just before the verdict came back
        while self.udp is not None:
            try:
                data, _ = self.udp.recvfrom(65536)
            except OSError:
                break
            with self._lock:
                self._received.append(b"udp:" + data)
        with self._lock:
            received, self._received = self._received, []
        return received

    def close(self) -> None:
        self._stop.set()
        for sock in (self.udp, self.tcp):
            if sock is not None:
                sock.close()


@dataclass
class Run:
    """One cheat's evaluation and what it left behind."""

    verdict: object
    files: list[Path] = field(default_factory=list)
    packets: list[bytes] = field(default_factory=list)
    after: object | None = None  # the control's verdict in the same evaluator (isolated cheats)


RUNS: dict[tuple[str, bool], Run] = {}
NOTES: list[str] = []


@pytest.fixture(scope="module")
def listener():
    observer = Listener()
    NOTES.extend(observer.notes)
    yield observer
    observer.close()


@pytest.fixture(scope="module", autouse=True)
def clean_artifacts():
    _remove_artifacts()
    yield
    _remove_artifacts()


@pytest.fixture(scope="module")
def shared_evaluator():
    with Evaluator(EvalOptions(**OPTIONS)) as evaluator:
        yield evaluator


def _stopped_by_static_rules(verdict) -> bool:
    return str(getattr(verdict.stage, "value", verdict.stage)) == "static"


@pytest.fixture(scope="module")
def run_cheat(shared_evaluator, listener):
    """Evaluates a cheat with the static rules on and, where they stopped it, off (where they
    did not, the same code ran: that verdict stands for both). Isolated cheats go to a fresh
    evaluator, where the control follows them; the others to the module's evaluator."""

    def evaluate(evaluator, cheat: Cheat, static: bool) -> Run:
        before = _artifacts()
        listener.drain()
        with static_rules(static):
            verdict = evaluator.evaluate(_problem(cheat.problem), cheat.source, f"{cheat.name}.py")
        return Run(verdict, sorted(_artifacts() - before), listener.drain())

    def run(cheat: Cheat, static: bool = True) -> Run:
        key = (cheat.name, static)
        if key not in RUNS and (cheat.name, True) not in RUNS:
            isolated = "isolate" in cheat.tags
            fresh = Evaluator(EvalOptions(**OPTIONS)) if isolated else _nothing(shared_evaluator)
            with fresh as ev:
                on = RUNS[(cheat.name, True)] = evaluate(ev, cheat, static=True)
                off = on
                if _stopped_by_static_rules(on.verdict):
                    wanted = cheat in DESIGN and _static_module() is not None
                    off = evaluate(ev, cheat, static=False) if wanted else None
                if off is not None and isolated:
                    control = BY_NAME[CONTROL]
                    off.after = ev.evaluate(
                        _problem(control.problem), control.source, f"{control.name}.py"
                    )
                if off is not None:
                    RUNS[(cheat.name, False)] = off
        if key not in RUNS:
            assert cheat in DESIGN, f"{cheat.name} is not run with the static rules off"
            pytest.skip(f"no {STATIC_MODULE}.{STATIC_NAME} to switch the static rules off with")
        return RUNS[key]

    yield run
    report = os.environ.get("KBOT_REDTEAM_REPORT")
    if report:
        Path(report).write_text(_table(), encoding="utf-8")


@contextmanager
def _nothing(value):
    yield value


def _describe(verdict) -> str:
    if verdict is None:
        return ""
    if verdict.accepted:
        return "**accepted**"
    rules = sorted({r.rule for r in verdict.reasons})
    return "rejected (" + ", ".join(rules) + ")"


def _effects(run: Run | None) -> str:
    if run is None:
        return ""
    effects = [f"file {p.name}" for p in run.files]
    effects += [p.split(b" ")[0].decode("ascii", "replace") for p in run.packets]
    return ", ".join(effects)


def _table() -> str:
    rows = [
        "| cheat | class | expect | static rules on | static rules off | control after it "
        "(static off) | side effects (on; off) |",
        "|---|---|---|---|---|---|---|",
    ]
    for cheat in CHEATS:
        on, off = RUNS.get((cheat.name, True)), RUNS.get((cheat.name, False))
        if on is None and off is None:
            continue
        effects = "; ".join(e for e in (_effects(on), _effects(off)))
        rows.append(
            f"| {cheat.name} | {cheat.klass} | {cheat.expect} | "
            f"{_describe(on.verdict) if on else ''} | {_describe(off.verdict) if off else ''} | "
            f"{_describe(off.after) if off else ''} | {effects if effects != '; ' else ''} |"
        )
    for what, outcome in CANARY:
        rows.append(f"\ncanary, static rules {what}: {outcome}")
    rows += [f"\nnote: {note}" for note in NOTES]
    return "\n".join(rows) + "\n"


def _assert_contained(cheat: Cheat, run: Run) -> None:
    json.dumps(run.verdict.to_json())  # a verdict always serialises
    assert len(run.verdict.worker_output) <= OUTPUT_BOUND, "the captured output is not bounded"
    assert not run.files, f"{cheat.name} left files behind, outside any sandbox: {run.files}"
    assert not run.packets, f"{cheat.name} reached the network: {[p[:40] for p in run.packets]}"


def _gpu_gap(cheat: Cheat) -> bool:
    """A cheat only the CPU interpreter's checks reject, judged here on a GPU."""
    return "cpu" in cheat.tags and OPTIONS["device"] != "cpu"


def _assert_rejected(cheat: Cheat, verdict) -> None:
    reasons = [str(r) for r in verdict.reasons]
    assert verdict.accepted is False, f"{cheat.name} was accepted: {cheat.attack}"
    named = [r.rule for r in verdict.reasons if r.rule and NAMED_RULE.match(r.rule)]
    assert named, f"rejected without a named rule: {reasons}"
    assert all(r.message for r in verdict.reasons), reasons


def test_the_suite_covers_every_class():
    assert len([c for c in CHEATS if c.klass != "control"]) >= 36
    for cheat in CHEATS:
        assert cheat.expect in ("rejected", "harmless"), f"{cheat.name}: no EXPECT line"
        assert cheat.attack, f"{cheat.name}: no sentence on the attack"
        assert (PROBLEMS / f"{cheat.problem}.py").is_file(), f"{cheat.name}: PROBLEM"
        assert cheat.klass in CLASSES, f"{cheat.name}: CLASS {cheat.klass!r}"
        assert cheat.tags <= TAGS, f"{cheat.name}: TAGS {set(cheat.tags)}"
        assert "@triton.jit" in cheat.source and "class ModelNew(nn.Module)" in cheat.source
    assert {c.klass for c in CHEATS} == set(CLASSES)
    control = BY_NAME[CONTROL]
    assert control.expect == "rejected" and not control.tags
    assert len(STEALERS) >= 10 and len(ISOLATED) >= 8


@pytest.mark.parametrize("cheat", CHEATS, ids=str)
def test_cheat_is_rejected_or_harmless(cheat, run_cheat):
    run = run_cheat(cheat)
    _assert_contained(cheat, run)
    if cheat.expect == "rejected" and not _gpu_gap(cheat):
        _assert_rejected(cheat, run.verdict)


@pytest.mark.parametrize("cheat", DESIGN, ids=str)
def test_the_design_stops_it_without_the_static_rules(cheat, run_cheat):
    """With the static rules off the cheat runs: it may not leave anything behind, and a wrong,
    stolen or precomputed answer must still be rejected by the checks on the trusted side."""
    run = run_cheat(cheat, static=False)
    _assert_contained(cheat, run)
    if cheat.design_must_reject and not _gpu_gap(cheat):
        _assert_rejected(cheat, run.verdict)


@pytest.mark.parametrize("cheat", ISOLATED, ids=str)
def test_a_patch_does_not_outlive_its_candidate(cheat, run_cheat):
    # The cheat runs with the static rules off, so its patch is really applied; the control
    # comes right after it, through the same Evaluator, as the next candidate of a search.
    after = run_cheat(cheat, static=False).after
    assert after is not None
    assert after.accepted is False, (
        f"after {cheat.name}, the plainly wrong {CONTROL} was accepted: the patch persisted"
    )
    assert any(r.rule and NAMED_RULE.match(r.rule) for r in after.reasons), [
        str(r) for r in after.reasons
    ]


_DRIVER = r"""
import json, sys
jobs = json.load(open(sys.argv[1]))
import kbot.evaluate.evaluator as evaluator_module
from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem

result = {"verdicts": [], "refused": None, "static": jobs["static"]}
if jobs["static"] == "off":
    if not hasattr(evaluator_module, jobs["static_name"]):
        result["refused"] = "the static rules cannot be switched off"
        json.dump(result, open(sys.argv[2], "w"))
        raise SystemExit(0)
    setattr(evaluator_module, jobs["static_name"], lambda *args, **kwargs: ())
try:
    evaluator = Evaluator(EvalOptions(**jobs["options"]))
except Exception as exc:  # e.g. no sandbox here while a token is in the environment
    result["refused"] = f"{type(exc).__name__}: {exc}"
    json.dump(result, open(sys.argv[2], "w"))
    raise SystemExit(0)
with evaluator:
    for name, problem, path in jobs["cheats"]:
        source = open(path, encoding="utf-8").read()
        verdict = evaluator.evaluate(load_problem(problem), source, name + ".py")
        result["verdicts"].append({"name": name, "verdict": verdict.to_json()})
        print("evaluated", name, verdict.accepted, flush=True)
json.dump(result, open(sys.argv[2], "w"))
"""
CANARY: list[tuple[str, str]] = []


@pytest.mark.parametrize("static", ["on", "off"])
def test_canary_credentials_never_come_out(static, tmp_path, monkeypatch, listener):
    """Fake credentials in the environment of the process that runs the evaluator: under names
    the scrub knows (GITHUB_TOKEN, OPENAI_API_KEY) and under one it cannot guess
    (MY_DEPLOY_VALUE, say what a user configures as `publish.token_env`: kbot has no way to tell
    the evaluator about such a name, so only an environment built from an allowlist keeps it
    out). The evaluator runs in a child started with them, because /proc/<pid>/environ shows
    only the environment a process started with, not what monkeypatch adds later. This
    process's own environment gets them too, for cheats that read their grandparent."""
    canary = CANARY_PREFIX + secrets.token_hex(12)
    for index, name in enumerate(("GITHUB_TOKEN", "OPENAI_API_KEY", "MY_DEPLOY_VALUE")):
        monkeypatch.setenv(name, f"{canary}-{index}")
    # A name the allowlist's TRITON_ prefix admits, holding a password in a URL.
    monkeypatch.setenv("TRITON_REMOTE_CACHE_URL", f"redis://user:{canary}-3@cache.internal")
    # A Triton remote cache's password, under a name the TRITON_ prefix once admitted.
    monkeypatch.setenv("TRITON_REDIS_PASS", f"{canary}-4")
    package_root = str(Path(kbot.__file__).resolve().parents[1])  # the kbot under test
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    )
    jobs = {
        "options": OPTIONS,
        "static": static,
        "static_name": STATIC_NAME,
        "cheats": [
            [c.name, str(PROBLEMS / f"{c.problem}.py"), str(REDTEAM / f"{c.name}.py")]
            for c in STEALERS
        ],
    }
    (tmp_path / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    (tmp_path / "driver.py").write_text(_DRIVER, encoding="utf-8")
    before = _artifacts()
    listener.drain()
    done = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py"), "jobs.json", "result.json"],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    leaks = []
    for stream, text in (("stdout", done.stdout), ("stderr", done.stderr)):
        if canary in text:
            leaks.append(f"the evaluator's {stream}")
    if result["refused"] is not None:
        assert canary not in result["refused"]
        CANARY.append((static, f"not run: {result['refused'][:200]}"))
        assert not leaks, "the canary came out through: " + "; ".join(leaks)
        if static == "off":
            pytest.skip(f"the stealers did not run: {result['refused']}")
        return
    assert [v["name"] for v in result["verdicts"]] == [c.name for c in STEALERS]
    for item in result["verdicts"]:
        text = json.dumps(item["verdict"])
        if canary in text:
            where = [k for k, v in item["verdict"].items() if canary in json.dumps(v)]
            leaks.append(f"{item['name']}'s verdict ({', '.join(where)})")
    written = (_artifacts() - before) | {
        p for p in tmp_path.rglob("*") if p.is_file() and p.name != "result.json"
    }
    for path in sorted(written):
        if path.is_file() and canary.encode() in path.read_bytes()[: 64 << 20]:
            leaks.append(f"the file {path}")
    packets = listener.drain()
    for packet in packets:
        if canary.encode() in packet:
            leaks.append(f"a {packet[:3].decode()} packet to 127.0.0.1")
    accepted = sum(1 for item in result["verdicts"] if item["verdict"]["accepted"])
    CANARY.append(
        (static, f"{accepted}/{len(STEALERS)} stealers accepted; leaks: {leaks or 'none'}")
    )
    assert not leaks, "the canary came out through: " + "; ".join(leaks)
    # The same containment as every other cheat: bounded output, nothing left behind.
    for item in result["verdicts"]:
        assert len(item["verdict"]["worker_output"]) <= OUTPUT_BOUND, item["name"]
    assert not _artifacts() - before, f"files left behind: {sorted(_artifacts() - before)}"
    assert not packets, f"reached the network: {[p[:40] for p in packets]}"
