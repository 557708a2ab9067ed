"""Fixtures for the search tests: fakes (loaded by path, see fakes.py) and a tiny problem."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).parent

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


def _load_fakes():
    spec = importlib.util.spec_from_file_location("kbot_search_test_fakes", HERE / "fakes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def fakes():
    return _load_fakes()


@pytest.fixture
def problem(tmp_path):
    from kbot.problem import load_problem

    path = tmp_path / "scale.py"
    path.write_text(PROBLEM)
    return load_problem(path)


@pytest.fixture
def fake_factories(fakes):
    """(evaluator_factory, proposer_factory, made) where `made` collects the instances."""
    made = {"evaluators": [], "proposers": []}

    def evaluator_factory(device, gpus, seeds, timed=False):
        evaluator = fakes.FakeEvaluator(timed=timed)
        made["evaluators"].append(evaluator)
        return evaluator

    def proposer_factory(names):
        proposers = [fakes.FakeProposer()]
        made["proposers"].extend(proposers)
        return proposers

    return evaluator_factory, proposer_factory, made
