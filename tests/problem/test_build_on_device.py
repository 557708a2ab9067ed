"""The judge builds Model (and a candidate's process ModelNew) with its tensors made on the
evaluation device, so random initialisation runs there (an nn.Linear took 1.8 s per GB on two
CPU threads, once per candidate); a constructor that cannot run so is built on the CPU, as
before. The meta device stands in for a GPU here."""

import numpy as np
import pytest
import torch
from torch import nn

from kbot.problem.runtime import build_on


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 4)


class NeedsNumpy(nn.Module):
    def __init__(self):
        super().__init__()
        table = torch.arange(6).numpy()  # a tensor handed to numpy: CPU only
        self.register_buffer("table", torch.from_numpy(np.ascontiguousarray(table)))
        self.proj = nn.Linear(8, 4)


def test_the_model_is_made_on_the_device():
    assert build_on("meta", Plain).proj.weight.device.type == "meta"


def test_a_constructor_that_needs_the_cpu_is_built_there_with_the_same_seed():
    model = build_on("meta", NeedsNumpy, seed=3)
    assert model.proj.weight.device.type == "cpu"
    torch.manual_seed(3)
    assert torch.equal(model.proj.weight, NeedsNumpy().proj.weight)


def test_on_the_cpu_nothing_changes():
    torch.manual_seed(5)
    expected = Plain().proj.weight
    assert torch.equal(build_on("cpu", Plain, seed=5).proj.weight, expected)


def test_a_constructor_that_fails_everywhere_raises_its_own_error():
    class Broken(nn.Module):
        def __init__(self):
            raise ValueError("hidden_size must be even")

    with pytest.raises(ValueError, match="hidden_size must be even"):
        build_on("meta", Broken)
