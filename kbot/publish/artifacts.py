"""Everything a kbot PR carries, rendered from its plan (kbot.publish.plan): the kernel module,
the integration edits, the parity test, the benchmark script, title, body, commit message and
the hidden marker."""

from __future__ import annotations

import posixpath
import textwrap
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from kbot import __version__
from kbot.evaluate.verdict import NOT_TIMED, Verdict
from kbot.publish.adapters import AdapterInput, FileChange, Integration
from kbot.publish.callsite import KernelCall
from kbot.publish.marker import Marker
from kbot.publish.names import own_names
from kbot.publish.plan import Layout, PublishPlan, plan_publication
from kbot.publish.pr_template import follow_template
from kbot.publish.reference import (
    binds,
    check_names,
    import_sections,
    imported_names,
    parametrize_sizes,
    py_literal,
    reimport,
    size_keyword,
    split_reference,
    top_level_names,
    without_unbound_annotations,
)
from kbot.publish.render import render
from kbot.publish.rundir import RunDir
from kbot.publish.sizes import by_size_context
from kbot.publish.swept import passed_sizes
from kbot.publish.tolerances import dtype_tolerances


@dataclass(frozen=True)
class Publication:
    op: str
    adapter: str
    title: str
    body: str
    labels: tuple[str, ...]
    files: tuple[FileChange, ...]  # the kernel module, integration edits, parity test, benchmark
    marker: Marker
    commit_message: str


def build_publication(
    run: RunDir,
    repo_root: Path,
    scanned_prefix: str,
    base_sha: str,
    labels: tuple[str, ...],
    adapter: str = "auto",
) -> Publication:
    """Plan, then render: the PR for `run` against the base branch checked out at `repo_root`."""
    return render_publication(
        plan_publication(run, repo_root, scanned_prefix, base_sha, labels, adapter)
    )


def render_publication(plan: PublishPlan) -> Publication:
    """The PR's files, title, body and commit message from its plan: the templates only."""
    run, call, layout, integration = plan.run, plan.call, plan.layout, plan.integration
    context = _code_context(run, call, layout, plan.kernel_import, plan.dtypes)
    package = plan.kernel_import.split(".")[0]
    kernel_name, entry = own_names(
        call.launcher, integration.entry, top_level_names(context["reference_body"])
    )
    kernel_line = f"from {plan.kernel_import} import {call.launcher}" + (
        f" as {kernel_name}" if kernel_name != call.launcher else ""
    )
    context["kernel_call"] = call.render({"self": "model"}, launcher=kernel_name)
    parity = render(
        "parity_test.py.j2",
        **context,
        entry=entry,
        **_imports(
            ["import os", "import pytest", "import torch", *context["reference_imports"],
             *context["package_imports"], kernel_line, *([entry.import_line] if entry else [])],
            package, layout, layout.parity_path,
        ),
    )  # fmt: skip
    check_names(parity, context["reference_body"], layout.parity_path)
    original = integration.original
    rebinds = original is not None and binds(run.problem.source, "_reference")
    existing = _existing_context(integration, plan.spec)
    bench_imports = [
        "import argparse", *(["import importlib"] if existing else []), "import torch",
        *context["reference_imports"], *context["package_imports"], kernel_line,
        *([existing["import_line"]] if existing else []),
    ]  # fmt: skip
    if original is not None:  # copied from the module: its annotations may name its imports
        bound = top_level_names(context["reference_body"]) | imported_names(
            "\n".join(bench_imports)
        )
        original = (original[0], without_unbound_annotations(original[1], bound))
    bench = render(
        "bench_script.py.j2",
        **context,
        original=original if rebinds else None,
        baseline_patched=integration.adapter == "guarded_dispatch"
        and not rebinds
        and bool(context["package_imports"]),
        base_sha=plan.base_sha[:12],
        target_name=plan.target.qualname,
        existing=existing,
        **_imports(bench_imports, package, layout, layout.bench_path),
    )  # fmt: skip
    check_names(bench, context["reference_body"], layout.bench_path, rebinds=("_reference",))
    files = (
        FileChange(layout.kernel_path, run.kernel_source, created=True),
        *integration.changes,
        FileChange(layout.parity_path, parity, created=layout.parity_path not in plan.existing),
        FileChange(layout.bench_path, bench, created=layout.bench_path not in plan.existing),
    )
    marker = Marker(op=call.launcher, kernel_sha256=run.kernel_sha256, base_sha=plan.base_sha)
    title = f"[kbot] Triton kernel for {plan.target.qualname} ({_speed_phrase(run)})"
    body = render(
        "pr_body.md.j2",
        **body_context(run, integration, layout, files, marker),
    )
    if plan.pr_template is not None:
        body = follow_template(plan.pr_template, body)
    details = (
        f"Kernel: {layout.kernel_path} (sha256 {run.kernel_sha256[:12]}), generated by kbot "
        f"{__version__}; parity test: {layout.parity_path}; benchmark: {layout.bench_path}."
    )
    message = (
        f"Add a Triton kernel for {plan.target.qualname}\n\n"
        f"{textwrap.fill(integration.dispatch_note.replace('`', ''), 72)}\n\n"
        f"{textwrap.fill(details, 72)}\n"
    )
    return Publication(
        op=call.launcher,
        adapter=plan.adapter,
        title=title,
        body=body,
        labels=plan.labels,
        files=files,
        marker=marker,
        commit_message=message,
    )


def _imports(lines: list[str], package: str, layout: Layout, path: str) -> dict[str, Any]:
    """A file's import sections, isort-ordered. When the import root is not an installable
    project (gpt-fast's flat `model.py`, a folder of scripts), nothing puts it on the path for
    pytest or for `python FILE`: the file then puts it there itself, and the imports of modules
    that live there follow that line (`late_imports`, marked for flake8's E402)."""
    if layout.installable:
        return {"import_sections": import_sections(lines, package), "path_setup": None}

    def local(line: str) -> bool:
        name = line.split()[1].split(".")[0]
        return name == package or name in layout.local_modules

    late = [line for section in import_sections(filter(local, lines), package) for line in section]
    relative = posixpath.relpath(layout.import_root or ".", str(PurePosixPath(path).parent))
    root = f"`{layout.import_root}`" if layout.import_root else "the repository's root"
    return {
        "import_sections": import_sections(
            [*(line for line in lines if not local(line)), "import os", "import sys"], package
        ),
        "path_setup": {"root": root, "relative": relative},
        "late_imports": [f"{line}  # noqa: E402" for line in late],
    }


def _code_context(
    run: RunDir, call: KernelCall, layout: Layout, kernel_import: str, dtypes: tuple[str, ...]
) -> dict[str, Any]:
    source = run.problem.source
    if run.target is not None and run.target.module:
        # a problem file from a scan that named the module otherwise (before the import
        # folder of a PEP 420 folder was fixed: `layernorm` for nanovllm.layers.layernorm)
        source = reimport(source, run.target.module, layout.target_module)
    reference = split_reference(source, kernel_import.split(".")[0])
    passed = passed_sizes(run.report)
    sized = parametrize_sizes(reference.body, list(dict.fromkeys(size for size, _ in passed)))
    swept_cases = [
        {**(dict(run.problem.cases[0]) if run.problem.cases else {}), size_keyword(s): to}
        for s, to in passed
        if size_keyword(s) in sized.inputs_keys
    ]
    tolerances = dtype_tolerances(run, dtypes)
    return {
        "op": call.launcher,
        "kbot_version": __version__,
        "target_label": f"{layout.target_path}::{run.target.qualname if run.target else ''}",
        "reference_imports": list(reference.imports),
        "package_imports": list(reference.package_imports),
        "reference_body": sized.body if swept_cases else reference.body,
        "swept_cases": [py_literal(case) for case in swept_cases],
        "init_sizes": py_literal(list(sized.init_keys)),
        "kernel_import": kernel_import,
        "forward_params": list(call.forward_params),
        "kernel_call": call.render({"self": "model"}),
        "tolerances": [(d, {"atol": tolerances[d][0], "rtol": tolerances[d][1]}) for d in dtypes],
        "dtypes": list(dtypes),
        "dtypes_literal": py_literal(list(dtypes)),
        "cases": py_literal([dict(c) for c in run.problem.cases]),
        "seeds": repr(list(range(min(run.verdict.seeds or 3, 3)))),
        "bench_path": layout.bench_path,
    }


def _existing_context(integration: Integration, spec: AdapterInput) -> dict[str, str] | None:
    """What the benchmark needs to time the op's existing fast path: the copy's name, its source
    as a Python literal (a raw triple-quoted string when that is lossless, so it stays readable)
    and the module whose namespace it runs in (its own imports resolve there)."""
    if integration.existing is None:
        return None
    name, code = integration.existing
    quotes = "'" * 3
    readable = quotes not in code and not code.rstrip("\n").endswith(chr(92))
    literal = f"r{quotes}{code}{quotes}" if readable else repr(code)
    entry = integration.entry
    if entry.construct is None:  # a plain function has no fast-path method to call
        return None
    return {
        "name": name,
        "source_literal": literal,
        "module": spec.module_of(spec.target_path),
        "label": f"{spec.qualname.split('.')[0]}.{name.removeprefix('_existing_')}",
        "import_line": entry.import_line,
        "construct": entry.construct,
        "loads_state": entry.loads_state,
    }


def _speed_phrase(run: RunDir) -> str:
    """The title's claim: vs torch.compile; a timed run without compile baselines says it
    was measured against eager only, never "not timed"."""
    geomean = run.verdict.speedup_geomean("compile")
    if geomean is not None:
        return f"{geomean:.2f}x vs torch.compile"
    eager = run.verdict.speedup_geomean("eager")
    if eager is not None:
        return f"{eager:.2f}x vs eager; torch.compile not measured"
    return "correctness-checked, not timed"


@dataclass(frozen=True)
class ModelSpending:
    """What the language model cost the search that found this kernel (report.json's `llm`)."""

    paid_calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    usd: float
    models: str  # "name (calls, $usd), ..."
    op_usd: float | None  # every run of this op, this one included


def model_spending(report: dict[str, Any]) -> ModelSpending | None:
    """None when no model took part (report.json without `llm`, or malformed)."""
    llm = report.get("llm")
    run = llm.get("run") if isinstance(llm, dict) else None
    if not isinstance(run, dict):
        return None
    op = llm.get("op") if isinstance(llm.get("op"), dict) else None

    def number(source: dict[str, Any], key: str) -> float:
        value = source.get(key)
        return float(value) if isinstance(value, (int, float)) else 0.0

    models = ", ".join(
        f"{m.get('model')} ({int(number(m, 'calls'))} calls, ${number(m, 'usd'):.4f})"
        for m in run.get("by_model") or []
        if isinstance(m, dict) and m.get("model")
    )
    return ModelSpending(
        paid_calls=int(number(run, "paid_calls")),
        cached_calls=int(number(run, "cached_calls")),
        prompt_tokens=int(number(run, "prompt_tokens")),
        completion_tokens=int(number(run, "completion_tokens")),
        usd=number(run, "usd"),
        models=models,
        op_usd=number(op, "usd") if op is not None else None,
    )


def body_context(
    run: RunDir,
    integration: Integration,
    layout: Layout,
    files: tuple[FileChange, ...],
    marker: Marker,
) -> dict[str, Any]:
    verdict = run.verdict
    target = run.target
    assert target is not None
    correctness = [c.correctness for c in verdict.cases if c.correctness is not None]
    distributions = sorted({d for c in correctness for d in c.distributions}) or ["normal"]
    roles = {
        layout.kernel_path: "the kernel module (only torch and triton imports)",
        layout.parity_path: "parity test against the original op",
        layout.bench_path: "benchmark script (eager, torch.compile, kbot)",
    }
    return {
        "target_label": f"{layout.target_path}::{target.qualname}",
        "qualname": target.qualname,
        "kind": target.kind,
        "adapter": integration.adapter,
        "dispatch_note": integration.dispatch_note,
        "time_share": target.time_share,
        "time_kind": target.time_kind or "op",
        "why": f"`kbot scan` found it as a {target.kind.replace('_', ' ')} target"
        + (f" (line {target.line})." if target.line else "."),
        **performance_context(verdict),
        "by_size": by_size_context(run.report),
        "sweep": run.report.get("sweep") if isinstance(run.report.get("sweep"), dict) else None,
        "model_spending": model_spending(run.report),
        "seeds": verdict.seeds,
        "distributions": distributions,
        "stage": verdict.stage.value,
        "correctness_rows": correctness,
        "float32_trials": sum(c.float32_reference_trials for c in correctness),
        "notes": [str(r) for r in verdict.reasons],
        "versions": sorted(verdict.versions.items()),
        "files": [
            {"path": f.path, "created": f.created, "role": roles.get(f.path, "integration")}
            for f in files
        ],
        "parity_path": layout.parity_path,
        "bench_path": layout.bench_path,
        "kbot_version": __version__,
        "marker": marker.to_json(),
    }


def performance_context(verdict: Verdict) -> dict[str, Any]:
    """What templates/performance.md.j2 shows: the PR body's table, also in the job summaries."""
    timing_rows = []
    for case in verdict.cases:
        t = case.timing
        if t is None:
            continue
        timing_rows.append(
            {
                "case": case.case,
                "eager_us": t.eager_graph.median_us,
                # The faster torch.compile mode: what vs_compile is measured against.
                "compile_us": min(
                    (s.median_us for s in (t.compile_graph, t.compile_max_autotune_graph) if s),
                    default=None,
                ),
                "kbot_us": t.candidate_graph.median_us,
                "vs_eager": t.speedup_vs_eager,
                "vs_compile": t.speedup_vs_compile,
                "roofline": t.roofline_fraction,
                "roofline_peak": t.roofline_peak,  # the peak that bounds it, "" in old verdicts
                "spread": t.candidate_graph.spread,
                "runs": t.candidate_graph.runs,
                "kbot_plain_us": t.candidate_plain.median_us,
                # CPU µs to issue one call, per path (None in verdicts from before kbot
                # measured it)
                "host_us": [
                    None if s is None else s.median_us
                    for s in (t.eager_host, t.compile_host, t.candidate_host)
                ],
            }
        )
    return {
        "timed": bool(timing_rows) and verdict.timed,
        "timing_rows": timing_rows,
        "untimed_cases": list(verdict.untimed_cases),
        "not_timed": NOT_TIMED,
        "device": verdict.device,
    }
