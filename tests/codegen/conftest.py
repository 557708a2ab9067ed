"""Helpers for codegen tests: run a candidate beside its reference on random inputs."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path

import pytest
import torch

from kbot.problem import load_problem
from kbot.problem.runtime import case_inputs, import_file, init_inputs

PROBLEMS = Path(__file__).parent / "problems"

_TOLERANCE = {
    torch.float32: (1e-4, 1e-4),
    torch.bfloat16: (2e-2, 2e-2),
    torch.float16: (2e-3, 2e-3),
}


def _import_source(source: str, tmp_path: Path):
    path = tmp_path / f"candidate_{uuid.uuid4().hex[:8]}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def run_and_compare(problem_path: Path, source: str, tmp_path: Path, seeds=(0, 1)) -> int:
    """Checks ModelNew against Model on every case and seed; returns the number of checks.
    Runs on the GPU when there is one (the interpreter otherwise)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    spec = load_problem(problem_path)
    reference = import_file(problem_path)
    candidate = _import_source(source, tmp_path)
    checks = 0
    for seed in seeds:
        torch.manual_seed(seed)
        model = reference.Model(*init_inputs(reference))
        with torch.no_grad():  # non-trivial parameters, so a dropped weight is caught
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.5)
        new = candidate.ModelNew(*init_inputs(reference))
        new.load_state_dict(model.state_dict())
        model, new = model.to(device), new.to(device)
        for case in spec.cases:
            inputs = [
                x.to(device) if isinstance(x, torch.Tensor) else x
                for x in case_inputs(reference, case)
            ]
            with torch.no_grad():
                expected = model(*inputs)
                got = new(*inputs)
            expected = expected if isinstance(expected, tuple) else (expected,)
            got = got if isinstance(got, tuple) else (got,)
            assert len(got) == len(expected)
            for e, g in zip(expected, got):
                assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape)
                if e.dtype not in _TOLERANCE:  # integers and booleans: exactly
                    assert torch.equal(g, e), (g, e)
                else:
                    atol, rtol = _TOLERANCE[e.dtype]
                    torch.testing.assert_close(g.float(), e.float(), atol=atol, rtol=rtol)
                checks += 1
    return checks


@pytest.fixture
def compare(tmp_path):
    return lambda problem, source: run_and_compare(problem, source, tmp_path)


@pytest.fixture
def load_candidate(tmp_path):
    """A candidate's source imported as a module, to call or to change its tunables."""
    return lambda source: _import_source(source, tmp_path)
