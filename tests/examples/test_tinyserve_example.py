"""The bundled example repo: its own tests pass, and its .kbot.yml points at real code."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from kbot.config import load_config


def test_example_own_tests_pass(example_root: Path) -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=example_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", summary) and "failed" not in summary, summary


def test_example_config_loads_with_the_documented_schema(example_root: Path) -> None:
    config = load_config(example_root, environ={})
    assert config.version == 1
    assert config.config_file == example_root / ".kbot.yml"
    assert [t.name for t in config.targets] == [
        "rmsnorm",
        "fused_add_rmsnorm",
        "gelu_tanh_and_mul",
        "rotary_neox",
        "logit_softcap",
        "quick_gelu",
        "fused_add_scale",
    ]
    # Decode and prefill cases, sized for a CPU demo (see the comment atop .kbot.yml).
    assert [case["T"] for case in config.scan.cases] == [1, 16, 64]
    assert all(t.cases == config.scan.cases for t in config.targets)
    assert config.publish.base_branch == "main" and config.publish.draft is True
    assert ".kbot.yml:" in config.source_of("publish.draft")


def _target_params(file: Path, qualname: str) -> tuple[list[str], list[str]]:
    """Constructor and call parameter names (without self) of `Class.method` or `function`."""
    tree = ast.parse(file.read_text())

    def names(fn: ast.FunctionDef | None, skip: int) -> list[str]:
        return [a.arg for a in fn.args.args[skip:]] if fn else []

    if "." not in qualname:
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == qualname]
        assert functions, f"{file} has no function {qualname}"
        return [], names(functions[0], 0)
    class_name, method_name = qualname.split(".")
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    assert classes, f"{file} has no class {class_name}"
    methods = {n.name: n for n in classes[0].body if isinstance(n, ast.FunctionDef)}
    assert method_name in methods, f"{class_name} has no method {method_name}"
    return names(methods.get("__init__"), 1), names(methods[method_name], 1)


def test_example_targets_name_real_methods_with_matching_arguments(example_root: Path) -> None:
    config = load_config(example_root, environ={})
    assert config.targets
    for target in config.targets:
        file_part, qualname = target.target.split("::")
        init_params, forward_params = _target_params(example_root / file_part, qualname)
        assert set(target.init) <= set(init_params), (target.name, init_params)
        assert list(target.inputs) == forward_params[: len(target.inputs)], (
            target.name,
            forward_params,
        )
        case_variables = {key for case in target.cases for key in case}
        for name, spec in target.inputs.items():
            for dim in spec.shape:
                assert isinstance(dim, int) or dim in case_variables | set(target.init), (
                    target.name,
                    name,
                    dim,
                )


def test_example_has_what_the_scanner_must_recognise(example_root: Path) -> None:
    sources = {
        path.name: path.read_text() for path in (example_root / "tinyserve" / "layers").glob("*.py")
    }
    everything = "\n".join(sources.values())
    assert everything.count("# kbot: optimize") >= 3
    assert everything.count("@torch.compile") >= 2
    assert (
        "def forward_native" in sources["custom_op.py"]
        and "def forward_cuda" in sources["custom_op.py"]
    )
    # One existing fast path (a Triton kernel) and one stochastic op.
    assert "triton_kernels import" in sources["activation.py"]
    assert "@triton.jit" in sources["triton_kernels.py"]
    assert ".exponential_()" in sources["sampler.py"]
