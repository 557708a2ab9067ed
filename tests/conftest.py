"""Test-wide setup, in one place: Triton's interpreter on CPU machines, no credentials of the
machine's own in the tests' environment, and the `gpu` marker."""

from __future__ import annotations

import os

import pytest

# Triton reads TRITON_INTERPRET when it is imported, so this must run before any test imports
# triton; child processes (the evaluator's worker) inherit it.
try:
    import torch

    _HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover - torch is a hard dependency
    _HAS_CUDA = False
if not _HAS_CUDA:
    os.environ["TRITON_INTERPRET"] = "1"

# Tests never need the machine's own tokens (a CI runner's, a developer's); with them gone the
# evaluator's refusal to run unconfined beside a credential is tested by the tests that set one.
from kbot.evaluate.credentials import held_credentials  # noqa: E402

for _name in held_credentials():
    os.environ.pop(_name, None)


@pytest.fixture
def device() -> str:
    """Where a test runs kernels in its own process: the GPU when the machine has one (Triton
    compiles for it there and cannot read CPU tensors), else the CPU under the interpreter."""
    return "cuda" if _HAS_CUDA else "cpu"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _HAS_CUDA:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
