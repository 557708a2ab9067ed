"""kbot.evaluate.autotune_turns: in the correctness trials every autotune config runs, one per
call, on a GPU as on a CPU (a wrong config that the timer never picked at the judged sizes was
accepted on a GPU); outside them the autotuner tunes as written, from an empty cache; a config
that does not build here is skipped as Triton's autotuner skips it."""

from __future__ import annotations

PROBE = r"""
import json, sys
import torch, triton, triton.language as tl
from triton.runtime import autotuner
from triton.runtime.errors import OutOfResources
from kbot.evaluate import autotune_turns

# Triton's timer, as a GPU's would answer: the last config is the fastest.
def timer(self, *args, config, **meta):
    position = [i for i, c in enumerate(self.configs) if c is config][0]
    return [float(len(self.configs) - position)] * 3

autotuner.Autotuner._bench = timer
autotune_turns.install(always=sys.argv[-1] == "cpu")

def does_not_build(nargs):
    raise OutOfResources(300000, 232448, "shared memory")

configs = [triton.Config({"B": 8}), triton.Config({"B": 16}), triton.Config({"B": 32})]
if sys.argv[-2] == "broken":
    configs[0] = triton.Config({"B": 8}, pre_hook=does_not_build)

@triton.autotune(configs=configs, key=["n"])
@triton.jit
def _which(y_ptr, n, B: tl.constexpr):
    tl.store(y_ptr, B)

def blocks(calls):
    out = []
    for _ in range(calls):
        y = torch.zeros(1, dtype=torch.int32)
        _which[(1,)](y, 4)
        out.append(int(y.item()))
    return out

plain = blocks(2)
with autotune_turns.in_turn():
    turns = blocks(4)
after = blocks(2)
print(json.dumps({"plain": plain, "turns": turns, "after": after}))
"""


def test_each_config_takes_its_turn_in_the_trials_only(interpreter_probe):
    got = interpreter_probe(PROBE, "plain", "gpu")
    assert got["plain"] == [32, 32]  # the timer's choice
    assert got["turns"] == [8, 16, 32, 8]  # one config per call, every one of them
    assert got["after"] == [32, 32]  # tuned afresh: the turns left nothing in the cache


def test_always_in_turn_on_a_cpu(interpreter_probe):
    got = interpreter_probe(PROBE, "plain", "cpu")
    assert got["plain"] + got["turns"] + got["after"] == [8, 16, 32, 8, 16, 32, 8, 16]


def test_a_config_that_does_not_build_is_skipped(interpreter_probe):
    got = interpreter_probe(PROBE, "broken", "gpu")
    assert got["plain"] == [32, 32]
    assert 8 not in got["turns"]
    assert set(got["turns"]) == {16, 32}
