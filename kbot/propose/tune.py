"""The `tune` proposer: mutates the launch and constexpr parameters of a parent candidate.

It edits constants in place at their AST positions (so comments and layout survive), and only
these: block sizes (powers of two), `num_warps`, `num_stages`, rows per program, programs per
row of a split reduction, GEMM group sizes, loop-vs-single-pass flags and `eviction_policy`;
codegen's decode launch (`DECODE_` constants) is tuned apart from the prefill one. Each
candidate it returns parses, differs from its parent, and records every tunable's value in
`params`.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from typing import Any

from kbot.propose.base import Parent, Proposal, ProposeContext, ProposeOutcome

# Tunables are UPPER_CASE constexpr names by convention; lower-case names such as `n_rows`
# are sizes of the problem and must never be touched.
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")
_BLOCK = re.compile(r"BLOCK")
_ROWS = re.compile(r"ROWS|PER_PROGRAM")
_GROUP = re.compile(r"^GROUP_SIZE")
_FLAG = re.compile(r"LOOP|SINGLE_PASS|ONE_PASS")
_SPLITS = re.compile(r"SPLITS$")
EVICTION_POLICIES = ("", "evict_first", "evict_last")
WARPS = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Tunable:
    """One constant the proposer may change, and where it sits in the source."""

    name: str
    kind: str  # block | warps | stages | rows | splits | group | flag | eviction
    value: Any
    lineno: int
    col: int
    end_lineno: int
    end_col: int


def kind_of(name: str) -> str | None:
    base = name.rsplit(".", 1)[-1]
    # A size-class prefix (DECODE_NUM_WARPS: codegen's decode launch) keeps the kind.
    if base in ("num_warps", "NUM_WARPS") or base.endswith("_NUM_WARPS"):
        return "warps"
    if base in ("num_stages", "NUM_STAGES") or base.endswith("_NUM_STAGES"):
        return "stages"
    if base == "eviction_policy":
        return "eviction"
    if not _CONSTANT.match(base):
        return None
    if _FLAG.search(base):
        return "flag"
    if _SPLITS.search(base):
        return "splits"
    if _ROWS.search(base):
        return "rows"
    if _GROUP.search(base):
        return "group"
    if _BLOCK.search(base):
        return "block"
    return None


def find_tunables(source: str) -> list[Tunable]:
    """Constant launch keywords (`kernel[grid](..., BLOCK=1024, num_warps=4)`), constant
    assignments to tunable names (`BLOCK_SIZE = 1024`) and `eviction_policy=` strings."""
    tree = ast.parse(source)
    found: list[Tunable] = []
    seen: dict[str, int] = {}

    def add(name: str, node: ast.Constant) -> None:
        kind = kind_of(name)
        if kind is None or not _fits(kind, node.value):
            return
        seen[name] = seen.get(name, 0) + 1
        unique = name if seen[name] == 1 else f"{name}#{seen[name]}"
        found.append(
            Tunable(unique, kind, node.value, node.lineno, node.col_offset,
                    node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)
        )  # fmt: skip

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            launch = _kernel_name(node)
            for keyword in node.keywords:
                if keyword.arg is None or not isinstance(keyword.value, ast.Constant):
                    continue
                if keyword.arg == "eviction_policy":
                    add("eviction_policy", keyword.value)
                elif launch is not None:
                    add(f"{launch}.{keyword.arg}", keyword.value)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    add(target.id, node.value)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(node.value, ast.Constant)
        ):
            add(node.target.id, node.value)
    found.sort(key=lambda t: (t.lineno, t.col))
    return found


def _kernel_name(call: ast.Call) -> str | None:
    """`_add_kernel[grid](...)` -> "_add_kernel"; other calls are not launches."""
    if isinstance(call.func, ast.Subscript):
        value = call.func.value
        if isinstance(value, ast.Name):
            return value.id
        if isinstance(value, ast.Attribute):
            return value.attr
    return None


def _fits(kind: str, value: Any) -> bool:
    if kind == "eviction":
        return isinstance(value, str) and value in EVICTION_POLICIES
    if kind == "flag":
        return isinstance(value, bool) or value in (0, 1)
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def neighbours(tunable: Tunable) -> list[Any]:
    """Values one mutation step away, within each kind's sensible range."""
    value, kind = tunable.value, tunable.kind
    if kind == "eviction":
        return [p for p in EVICTION_POLICIES if p != value]
    if kind == "flag":
        flipped = not value
        return [flipped if isinstance(value, bool) else int(flipped)]
    if kind == "warps":
        return [w for w in WARPS if w != value and 0.25 <= w / value <= 4]
    if kind == "stages":
        return [s for s in range(1, 7) if s != value and abs(s - value) <= 2]
    bounds = {"block": (16, 65536), "rows": (1, 128), "group": (1, 16), "splits": (2, 8192)}
    low, high = bounds[kind]
    base = 1 << max(0, value.bit_length() - 1)  # round a stray size down to a power of two
    steps = [base // 4, base // 2, base, base * 2, base * 4]
    return sorted({s for s in steps if low <= s <= high and s != value})


def apply(source: str, changes: dict[Tunable, Any]) -> str:
    """Replaces each tunable's constant by its new value, from the end of the file backwards."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    text = source
    spans = sorted(changes.items(), key=lambda kv: (kv[0].lineno, kv[0].col), reverse=True)
    for tunable, value in spans:
        start = offsets[tunable.lineno - 1] + _char_col(lines[tunable.lineno - 1], tunable.col)
        end = offsets[tunable.end_lineno - 1] + _char_col(
            lines[tunable.end_lineno - 1], tunable.end_col
        )
        text = text[:start] + repr(value) + text[end:]
    return text


def _char_col(line: str, byte_col: int) -> int:
    """AST columns count UTF-8 bytes; string slicing counts characters."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


class TuneProposer:
    name = "tune"

    def propose(self, context: ProposeContext) -> ProposeOutcome:
        parents = [p for p in context.parents if p.accepted] or list(context.parents)
        if not parents:
            return ProposeOutcome((), skipped_reason="tune needs a parent candidate to mutate")
        rng = random.Random(context.seed)
        proposals: list[Proposal] = []
        seen = {p.source_sha256 for p in context.parents}
        tunable_parents = []
        for parent in parents:
            try:
                tunables = find_tunables(parent.source)
            except SyntaxError:
                continue
            if tunables:
                tunable_parents.append((parent, tunables))
        if not tunable_parents:
            return ProposeOutcome(
                (), skipped_reason="no launch or constexpr parameters to tune in the parents"
            )
        for _ in range(context.max_proposals * 8):
            if len(proposals) >= context.max_proposals:
                break
            parent, tunables = rng.choice(tunable_parents)
            proposal = self._mutate(parent, tunables, rng)
            if proposal is not None and proposal.source_sha256 not in seen:
                seen.add(proposal.source_sha256)
                proposals.append(proposal)
        return ProposeOutcome(tuple(proposals))

    def _mutate(
        self, parent: Parent, tunables: list[Tunable], rng: random.Random
    ) -> Proposal | None:
        count = 1 if len(tunables) == 1 or rng.random() < 0.6 else 2
        chosen = rng.sample(tunables, count)
        changes = {}
        for tunable in chosen:
            options = neighbours(tunable)
            if options:
                changes[tunable] = rng.choice(options)
        if not changes:
            return None
        source = apply(parent.source, changes)
        try:
            ast.parse(source)
        except SyntaxError:  # cannot happen for constant swaps; never emit broken Python
            return None
        values = {t.name: t.value for t in tunables}
        values.update({t.name: v for t, v in changes.items()})
        mutated = ", ".join(f"{t.name} {t.value!r}->{v!r}" for t, v in changes.items())
        return Proposal(
            source=source,
            proposer=self.name,
            parent_sha256=(parent.source_sha256,),
            params={
                "tunables": values,
                "mutated": {t.name: [t.value, v] for t, v in changes.items()},
            },
            note=f"tune: {mutated}",
        )
