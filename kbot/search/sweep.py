"""The shape sweep: the final kernel checked at the sizes of other models.

A run's cases vary the token count; the op's other sizes (hidden, head, intermediate) have one
value each, so on its own the run proves the kernel at one model's sizes. The sweep rewrites
the problem with one of those sizes changed at a time — to the head and hidden sizes of common
model families, and an odd width — and checks the final kernel on each variant with the
evaluator (correctness only; ModelNew takes Model's state at its new shapes). A variant the
reference itself refuses (16 heads of 128 cannot be 3000 wide) is not applicable, not a
failure. report.json's `sweep` records each point; the publisher's guard frees a dimension the
kernel passed at every size, up to the largest checked, and keeps the others pinned to the
sizes that passed (kbot.publish.guard).

A size is swept when it is an integer literal of the problem's `get_inputs`, `get_init_inputs`
or module-level values, and a dimension of an input tensor that every case gives the same size.
Every literal of that value changes together: `get_init_inputs` -> [2048, 1e-6] and
`torch.randn((T, 2048))` are one hidden size.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec
from kbot.problem.spec import parse_problem
from kbot.search.sweep_facts import problem_facts

# Head sizes of common model families (64: Llama-2 7B-class small heads; 80: Phi-2 / Falcon;
# 96: Phi-3; 128: Llama-3 / Qwen / Mistral; 256: Gemma) and hidden sizes (Qwen2.5 0.5B ... 72B,
# Llama-3 8B / 70B, Mistral, DeepSeek): the sizes an op in a serving engine will be asked for.
HEAD_SIZES = (64, 80, 96, 128, 256)
WIDTHS = (896, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 7168, 8192)
ODD_WIDTH = 3000  # no power of two, not a multiple of 16: masking and tails
MIN_SWEPT = 16  # smaller literals are counts (heads per group, 2 halves), not model widths
MAX_POINTS = 8
SWEEP_FOLDER = "sweep"
_FIXED_NAMES = ("CASES", "KBOT")


@dataclass(frozen=True)
class SweepPoint:
    size: int  # the size as the problem has it (the rows point: the rows it splits)
    to: int  # what this point changes it to (the rows point: the rows of each leading index)
    source: str  # the problem at that size, with its first case only
    path: Path | None = None  # where that source was written
    # its first case's input shapes and Model's scalars (kbot.search.sweep_facts), or "error"
    facts: dict[str, Any] = field(default_factory=dict)
    # "size": one size changed; "rows": the token inputs' rows split into two leading dims
    kind: str = "size"
    tokens: tuple[int, ...] = ()  # the rows point: the forward arguments it split

    @property
    def stem(self) -> str:
        return "rows_split" if self.kind == "rows" else f"{self.size}_to_{self.to}"

    @property
    def label(self) -> str:
        return (
            f"{self.size}->{self.to}" if self.kind == "size" else f"rows {self.size}->2x{self.to}"
        )


def sweep_values(size: int) -> tuple[int, ...]:
    """The sizes a dimension of `size` is checked at besides its own."""
    if size <= HEAD_SIZES[-1]:
        picks: tuple[int, ...] = (64, 80, 256, 128)
    elif size <= WIDTHS[-1]:
        larger = next((w for w in WIDTHS if w > size), WIDTHS[-1])
        picks = (WIDTHS[0], larger, WIDTHS[-1], ODD_WIDTH)
    else:  # an intermediate size or a vocabulary: smaller ones and an odd one
        picks = (size // 2, size * 3 // 4 + 1)
    out: list[int] = []
    for value in picks:
        if value != size and value not in out:
            out.append(value)
    return tuple(out[:3] if size <= HEAD_SIZES[-1] else out)


def sweep_points(
    problem: ProblemSpec, folder: Path, max_points: int = MAX_POINTS
) -> tuple[list[SweepPoint], str]:
    """The variants to check, written to `folder` with what their inputs will be, and, when
    there are none, why (for the report). Both child processes (kbot.search.sweep_facts) run
    here, before the search, so the sweep after it only checks."""
    if max_points <= 0:
        return [], "turned off (search.sweep_points: 0)"
    try:
        tree = ast.parse(problem.source)
    except SyntaxError:
        return [], "the problem does not parse"
    literals = {n for n in _size_literals(tree) if n >= MIN_SWEPT}
    if not literals:  # nothing written to sweep (the rows point too): spare the child process
        return [], "no input has a size that is the same in every case and written in the problem"
    facts = problem_facts([Path(problem.path)]).get(str(problem.path)) or {}
    if "error" in facts or not facts:
        why = facts.get("error", "no answer")
        return [], f"its inputs could not be built on the meta device ({why})"
    sizes = [s for s in _fixed_input_sizes(facts["shapes"]) if s in literals]
    rows = _rows_point(problem, tree, facts["shapes"]) if problem.has_cases else None
    per_size = [[(size, to) for to in sweep_values(size)] for size in sizes]
    room = max_points - (rows is not None)
    order = [pair for round_ in _round_robin(per_size) for pair in round_][:room]
    first = problem.cases[0] if problem.cases else {}
    points = [
        SweepPoint(size, to, _resized(tree, size, to, first if problem.has_cases else None))
        for size, to in order
    ]
    points += [rows] if rows is not None else []
    if not points:
        return [], "no input has a size that is the same in every case and written in the problem"
    folder.mkdir(parents=True, exist_ok=True)
    _copy_target_json(problem.path, folder)
    written = []
    for point in points:
        path = folder / f"{problem.name}_{point.stem}.py"
        path.write_text(point.source, encoding="utf-8")
        written.append(replace(point, path=path))
    facts = problem_facts([p.path for p in written if p.path is not None])
    return [replace(p, facts=facts.get(str(p.path)) or {}) for p in written], ""


def run_sweep(
    check: Callable[[ProblemSpec, str, str, int], Verdict],
    source: str,
    points: list[SweepPoint],
    cached: Callable[[ProblemSpec], Verdict | None] | None = None,
    record: Callable[[ProblemSpec, Verdict], None] | None = None,
    checked: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Checks `source` at each point: `check(problem, source, name, upcoming) -> Verdict` is
    the evaluator's evaluate_sweep, told how many checks follow (wrapped in the run's budget
    by the caller, which may raise out of here, leaving the points checked so far in
    `checked`); `cached(problem)` / `record(problem, verdict)` read and write the store."""
    checked = [] if checked is None else checked
    variants = []
    for point in points:
        assert point.path is not None, "sweep_points writes every point"
        variant = parse_problem(point.source, point.path)
        variants.append((point, variant, cached(variant) if cached is not None else None))
    upcoming = sum(verdict is None for _, _, verdict in variants)
    for point, variant, verdict in variants:
        if verdict is None:
            upcoming -= 1
            verdict = check(variant, source, f"sweep_{point.stem}.py", upcoming)
            if record is not None:
                record(variant, verdict)
        checked.append(_point_report(point, variant, verdict))
    return {"points": checked}


def _point_report(point: SweepPoint, variant: ProblemSpec, verdict: Verdict) -> dict[str, Any]:
    status = "passed" if verdict.accepted else "failed"
    if not verdict.accepted and any(r.rule == "problem" for r in verdict.reasons):
        status = "not applicable"  # the reference refuses this size
    elif verdict.evaluator_failed:
        status = "not checked"  # the evaluator's own failure says nothing of the kernel
    reasons = [str(r) for r in verdict.reasons[:2]]
    entry: dict[str, Any] = {
        "size": point.size,
        "to": point.to,
        "kind": point.kind,
        **({"tokens": list(point.tokens)} if point.kind == "rows" else {}),
        "status": status,
        "reasons": reasons,
        "problem": variant.path.name,
    }
    # a refused point's shapes too: the guard keeps admitted sizes to what the reference takes;
    # without shapes the guard treats the point as changing any dimension
    facts = point.facts
    if facts.get("shapes"):
        entry["shapes"], entry["scalars"] = facts["shapes"][0], facts.get("scalars") or {}
    else:
        entry["facts_error"] = str(facts.get("error") or "no answer")
    return entry


def _rows_point(
    problem: ProblemSpec, tree: ast.Module, shapes: list[list[list[int] | None]]
) -> SweepPoint | None:
    """The token inputs' rows split into two leading dims ([rows, hidden] -> [2, rows / 2,
    hidden], gpt-fast's [batch, seqlen, hidden]) at the smallest case with an even row count:
    where the kernel passes, the guard admits the extra leading dims. Token inputs: those whose
    first dim is the first tensor input's in every case, which the cases vary; one of rank 2 or
    more (a [rows] vector alone has no rows to split off)."""
    first = next((i for i, s in enumerate(shapes[0] if shapes else []) if s), None)
    if first is None or len(shapes) < 2:
        return None
    rows = [case[first][0] if case[first] else None for case in shapes]
    if None in rows or len(set(rows)) < 2:
        return None
    tokens = [
        i for i in range(len(shapes[0]))
        if all(case[i] and case[i][0] == case[first][0] for case in shapes)
    ]  # fmt: skip
    if not any(len(shapes[0][i]) >= 2 for i in tokens):
        return None
    even = sorted((r, c) for c, r in enumerate(rows) if r >= 2 and r % 2 == 0)
    if not even:
        return None
    count, case = even[0]
    source = _with_case(ast.parse(ast.unparse(tree)), problem.cases[case])
    source += _ROWS_SPLIT.format(tokens=tuple(tokens))
    return SweepPoint(count, count // 2, source, kind="rows", tokens=tuple(tokens))


_ROWS_SPLIT = """

_kbot_unsplit_inputs = get_inputs


def get_inputs(*args, **kwargs):
    \"\"\"The problem's inputs with the rows of each token input split into two leading dims,
    [rows, ...] -> [2, rows / 2, ...]: kbot's shape sweep checks the kernel on them.\"\"\"
    inputs = list(_kbot_unsplit_inputs(*args, **kwargs))
    for i in {tokens}:
        inputs[i] = inputs[i].reshape(2, inputs[i].shape[0] // 2, *inputs[i].shape[1:])
    return inputs
"""


def _fixed_input_sizes(shapes: list[list[list[int] | None]]) -> list[int]:
    """Sizes >= MIN_SWEPT of input tensor dimensions that every case (`shapes`: per case, per
    input) gives the same size, largest first."""
    sizes: set[int] = set()
    for position in range(min((len(args) for args in shapes), default=0)):
        values = [args[position] for args in shapes]
        if any(v is None for v in values) or len({len(v) for v in values}) != 1:
            continue
        for dim in range(len(values[0])):
            dim_sizes = {int(v[dim]) for v in values}
            if len(dim_sizes) == 1 and values[0][dim] >= MIN_SWEPT:
                sizes.add(int(values[0][dim]))
    return sorted(sizes, reverse=True)


def _size_sites(tree: ast.Module) -> list[ast.stmt]:
    """Where a size may be written: the statements of get_inputs and get_init_inputs, and
    module-level assignments other than CASES and KBOT (statements, so that a transformer
    visiting one rewrites the literals inside it in place)."""
    sites: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
            sites.extend(node.body)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if not _names(node) & set(_FIXED_NAMES):
                sites.append(node)
    return sites


def _names(node: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _size_literals(tree: ast.Module) -> set[int]:
    return {node.value for site in _size_sites(tree) for node in ast.walk(site) if _is_int(node)}


class _Resize(ast.NodeTransformer):
    def __init__(self, size: int, to: int) -> None:
        self.size, self.to = size, to

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is int and node.value == self.size:
            return ast.copy_location(ast.Constant(self.to), node)
        return node


def _resized(tree: ast.Module, size: int, to: int, first_case: dict[str, Any] | None) -> str:
    """The problem's source with every literal `size` of its size sites set to `to` and, when
    it has CASES, only its first case (a sweep point checks the kernel's generality, not the
    timing sizes again)."""
    copy = ast.parse(ast.unparse(tree))
    resize = _Resize(size, to)
    for site in _size_sites(copy):
        resize.visit(site)
    return _with_case(copy, first_case)


def _with_case(tree: ast.Module, case: dict[str, Any] | None) -> str:
    """`tree`'s source with CASES set to `case` alone (None: as it is)."""
    if case is not None:
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "CASES" for t in node.targets
            ):
                node.value = ast.parse(repr([case]), mode="eval").body
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _round_robin(groups: list[list[tuple[int, int]]]) -> list[list[tuple[int, int]]]:
    """[[a1, a2], [b1]] -> [[a1, b1], [a2]]: every size gets its first point before any its
    second."""
    rounds: list[list[tuple[int, int]]] = []
    for index in range(max((len(g) for g in groups), default=0)):
        rounds.append([g[index] for g in groups if index < len(g)])
    return rounds


def _copy_target_json(problem_path: Path, folder: Path) -> None:
    """A scanned problem finds its checkout through the target.json beside it: the variants
    need one beside them too."""
    path = Path(problem_path)
    for meta in (path.with_suffix(".target.json"), path.parent / "target.json"):
        if meta.is_file():
            shutil.copyfile(meta, folder / "target.json")
            return
