"""The soak's candidates and what each must get, read from the files that already say it:

- honest kernels: the pairs of tests/evaluate/test_honest_candidates.py (HONEST), plus the
  honest fixtures of the other evaluator tests (a rotary cache gather, a bf16 RoPE that needs
  the float32 reference, an in-place rotation, a reference under @torch.compile): accepted;
- the issue's cheats: tests/evaluate/test_adversarial_candidates.py (CHEATS, with the rule
  each must be rejected by) and cheat_half_rows (nan-inf or mismatch);
- the red team: every file of tests/evaluate/redteam/, by its docstring's EXPECT line
  (`rejected`: any named rule; `harmless`: either verdict, it cannot change one);
- faults: the fixtures hang_forever and crash_wild_pointer (tests/evaluate/candidates), crash_abort
  (os.abort, stopped by the static rules), and this folder's candidates/, whose docstrings say
  the fault, the rules that may reject it and the devices it runs on;
- the probe: one fixed honest candidate timed between the faults (bench/problems/quick_gelu at
  T=16 and T=4096 on a GPU; the small test problem on a CPU, where nothing is timed).

Nothing here runs a candidate; `stream()` only orders them.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests" / "evaluate"
PROBLEMS = TESTS / "problems"
CANDIDATES = TESTS / "candidates"
REDTEAM = TESTS / "redteam"
FAULTS = Path(__file__).resolve().parent / "candidates"

# Honest fixtures beyond HONEST: (problem, candidate), each used by another evaluator test.
MORE_HONEST = [
    ("rotary_cache_buffer", "gather_rows"),  # test_static_reach: a non-persistent buffer gather
    ("rope_cancel_bf16", "rope_cancel_bf16"),  # test_float32_reference
    ("rotate_in_place", "rotate_in_place"),  # test_mutating_problems: mutates_inputs
    ("quick_gelu_compiled", "quick_gelu"),  # a reference under @torch.compile
]
# Faults among the evaluator tests' fixtures: (candidate, problem, family, rules that may reject).
FIXTURE_FAULTS = [
    ("hang_forever", "quick_gelu", "hang", ("timeout",)),
    ("crash_wild_pointer", "quick_gelu", "illegal-memory-access", ("forward-error", "crash")),
    ("crash_abort", "quick_gelu", "crash", ()),  # os.abort(): the static rules stop it
]
HALF_ROWS = ("cheat_half_rows", "silu_and_mul", ("nan-inf", "mismatch"))  # its own test
PROBE_CANDIDATE = CANDIDATES / "quick_gelu.py"
PROBE_GPU = (ROOT / "bench" / "problems" / "quick_gelu.py", ({"T": 16}, {"T": 4096}))
PROBE_CPU = (PROBLEMS / "quick_gelu.py", None)  # None: the problem's own cases
# The CPU smoke: a handful over three problems, one of each kind, three faults.
SMOKE = (
    "honest/silu_and_mul@silu_and_mul",
    "redteam/control_plain_wrong@quick_gelu",
    "redteam/secret_etc_passwd@add_rmsnorm",
    "fault/crash_deep_iterator@quick_gelu",
    "fault/oom_huge_empty@quick_gelu",
    "fault/hang_gpu_spin@quick_gelu",
)


@dataclass(frozen=True)
class Entry:
    """One candidate of the stream and the verdict it must get."""

    id: str  # kind/candidate@problem, or probe/N
    kind: str  # honest | cheat | redteam | fault | probe
    family: str  # the op, the cheat's rule or class, the fault
    problem: Path
    candidate: Path
    expect: str  # accepted | rejected | either
    rules: tuple[str, ...] = ()  # rules that may reject it; () = any named rule
    cases: tuple[dict, ...] | None = None  # replaces the problem's cases (the probe's)
    static_off: bool = False  # the static rules switched off for this one (--static-off)

    @property
    def problem_name(self) -> str:
        return self.problem.stem


def _module_value(path: Path, name: str) -> ast.AST:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    raise SystemExit(f"soak: {path} no longer defines {name}; update bench/soak/catalog.py")


def honest() -> list[Entry]:
    pairs = ast.literal_eval(_module_value(TESTS / "test_honest_candidates.py", "HONEST"))
    return [
        Entry(
            f"honest/{candidate}@{problem}",
            "honest",
            candidate,
            PROBLEMS / f"{problem}.py",
            CANDIDATES / f"{candidate}.py",
            "accepted",
        )
        for problem, candidate in [*pairs, *MORE_HONEST]
    ]


def cheats() -> list[Entry]:
    rows = _module_value(TESTS / "test_adversarial_candidates.py", "CHEATS")
    # (candidate, problem, rule, stage): the first three are constants
    found = [tuple(e.value for e in row.elts[:3]) for row in rows.elts]
    found.append((HALF_ROWS[0], HALF_ROWS[1], HALF_ROWS[2]))
    entries = []
    for candidate, problem, rule in found:
        rules = (rule,) if isinstance(rule, str) else tuple(rule)
        entries.append(
            Entry(
                f"cheat/{candidate}@{problem}",
                "cheat",
                "/".join(rules),
                PROBLEMS / f"{problem}.py",
                CANDIDATES / f"{candidate}.py",
                "rejected",
                rules,
            )
        )
    return entries


def redteam(static_off_classes: frozenset[str] = frozenset()) -> list[Entry]:
    entries = []
    for path in sorted(REDTEAM.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        head = re.match(r"EXPECT: (rejected|harmless)", doc)
        problem = re.search(r"^PROBLEM: *(\S+)", doc, re.M)
        klass = re.search(r"^CLASS: *(\S+)", doc, re.M)
        tags = re.search(r"^TAGS: *(.*)$", doc, re.M)
        if not (head and problem and klass):
            raise SystemExit(f"soak: {path} lacks its EXPECT/PROBLEM/CLASS lines")
        expect = "rejected" if head.group(1) == "rejected" else "either"
        entry = Entry(
            f"redteam/{path.stem}@{problem.group(1)}",
            "redteam",
            klass.group(1),
            PROBLEMS / f"{problem.group(1)}.py",
            path,
            expect,
        )
        entries.append(entry)
        honest_side_effect = tags is not None and "honest" in tags.group(1)
        if klass.group(1) in static_off_classes:
            # Without the static rules only the trusted side's checks stand: a wrong, stolen or
            # precomputed answer must still be rejected (test_redteam's design_must_reject).
            must = klass.group(1) in ("judge", "seed", "control") and not honest_side_effect
            entries.append(
                Entry(
                    f"redteam-static-off/{path.stem}@{problem.group(1)}",
                    "redteam",
                    f"{klass.group(1)} (static rules off)",
                    entry.problem,
                    path,
                    "rejected" if must else "either",
                    static_off=True,
                )
            )
    return entries


def faults(device: str) -> list[Entry]:
    entries = [
        Entry(
            f"fault/{candidate}@{problem}",
            "fault",
            family,
            PROBLEMS / f"{problem}.py",
            CANDIDATES / f"{candidate}.py",
            "rejected",
            rules,
        )
        for candidate, problem, family, rules in FIXTURE_FAULTS
    ]
    for path in sorted(FAULTS.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        fields = dict(re.findall(r"^(FAULT|EXPECT|PROBLEM|DEVICES): *(.*)$", doc, re.M))
        devices = [d.strip() for d in fields.get("DEVICES", "cpu, cuda").split(",")]
        if device not in devices:
            continue
        problem = fields["PROBLEM"].strip()
        entries.append(
            Entry(
                f"fault/{path.stem}@{problem}",
                "fault",
                fields["FAULT"].strip(),
                PROBLEMS / f"{problem}.py",
                path,
                "rejected",
                tuple(r.strip() for r in fields["EXPECT"].split(",")),
            )
        )
    return entries


def probe(number: int, device: str) -> Entry:
    problem, cases = PROBE_GPU if device == "cuda" else PROBE_CPU
    return Entry(
        f"probe/{number}", "probe", "quick_gelu", problem, PROBE_CANDIDATE, "accepted", (), cases
    )


def stream(
    device: str,
    seed: int,
    smoke: bool = False,
    only: tuple[str, ...] = (),
    static_off_classes: frozenset[str] = frozenset(),
    runs_code: Callable[[Entry], bool] = lambda entry: True,
) -> list[Entry]:
    """Every candidate once, shuffled under `seed`, with the probe first (before any fault),
    right after every fault whose code runs (`runs_code`: not stopped by the static rules),
    and last."""
    body = honest() + cheats() + redteam(static_off_classes) + faults(device)
    if smoke:
        body = [e for e in body if e.id in SMOKE]
    if only:
        body = [e for e in body if any(o in e.id for o in only)]
    random.Random(seed).shuffle(body)
    ordered = [probe(0, device)]
    for entry in body:
        ordered.append(entry)
        if entry.kind == "fault" and runs_code(entry):
            ordered.append(probe(len([e for e in ordered if e.kind == "probe"]), device))
    if ordered[-1].kind != "probe":
        ordered.append(probe(len([e for e in ordered if e.kind == "probe"]), device))
    return ordered
