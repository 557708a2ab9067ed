"""What the candidate's process compares after every call (kbot.evaluate.state_check): the
bytes of ModelNew's tensors, 0-d buffers included, and its plain Python values."""

from __future__ import annotations

import types

import torch

from kbot.evaluate.state_check import own_tensors as _own_tensors
from kbot.evaluate.state_check import python_state as _python_state
from kbot.evaluate.state_check import same_bits as _same_bits


def test_bytes_are_compared_for_every_shape_and_value():
    assert _same_bits(torch.tensor(3), torch.tensor(3))  # BatchNorm's num_batches_tracked
    assert not _same_bits(torch.tensor(3), torch.tensor(4))
    nan = torch.tensor(float("nan"))
    assert _same_bits(nan, nan.clone())
    assert not _same_bits(torch.tensor(0.0), torch.tensor(-0.0))
    assert _same_bits(torch.zeros(2, 3).t(), torch.zeros(3, 2))
    assert not _same_bits(torch.zeros(2), torch.zeros(2, dtype=torch.float16))


def test_every_tensor_and_plain_value_the_model_keeps_is_seen():
    class Inner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = [torch.zeros(2)]
            self.calls = 0

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(3))
            self.register_buffer("cache", torch.zeros(4), persistent=False)
            self.counter = torch.zeros(1)
            self.inner = Inner()

    model = Outer()
    names = {name for name, _ in _own_tensors(model)}
    assert {"weight", "cache", "counter", "inner.table[0]"} <= names
    module = types.SimpleNamespace(_CACHE={}, LIMIT=4)
    before = _python_state(model, module)
    model.inner.calls += 1
    module._CACHE[1] = 2
    after = _python_state(model, module)
    changed = {k for k in before if before[k] != after.get(k)}
    assert changed == {"inner.calls", "module-level _CACHE"}


def test_default_arguments_and_closures_of_the_module_are_seen():
    def make():
        calls = []

        def launcher(x, _seen={}):  # noqa: B006 - the state under test
            calls.append(1)
            _seen[len(calls)] = x
            return x

        return launcher

    launcher = make()
    module = types.SimpleNamespace(__name__="candidate", launcher=launcher)
    before = _python_state(None, module)
    launcher(0)
    after = _python_state(None, module)
    changed = {k for k in before if before[k] != after.get(k)}
    assert changed == {"launcher's default arguments", "launcher's closure cell 0"}
