"""Fixtures for the llm proposer's tests: the scripted chat server, a tiny problem, a key."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
KEY_ENV = "KBOT_TEST_LLM_API_KEY"
KEY = "sk-test-do-not-leak-0123456789abcdef"

PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0


CASES = [dict(N=64), dict(N=1000)]


def get_inputs(N=64):
    return [torch.randn(N)]


def get_init_inputs():
    return []
"""


def _load(name: str):
    module_name = f"kbot_llm_test_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def chat():
    """The server module: ChatServer, Reply, replies."""
    return _load("server")


@pytest.fixture(scope="session")
def kernels():
    return _load("kernels")


@pytest.fixture
def problem(tmp_path):
    from kbot.problem import load_problem

    path = tmp_path / "scale.py"
    path.write_text(PROBLEM)
    return load_problem(path)


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


@pytest.fixture(scope="session")
def search_fakes():
    """tests/search/fakes.py: a fake evaluator for loop-level tests."""
    spec = importlib.util.spec_from_file_location(
        "kbot_llm_search_fakes", HERE.parent / "search" / "fakes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
