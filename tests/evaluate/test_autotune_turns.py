"""kbot.evaluate.autotune_turns: in the correctness trials every autotune config runs, one per
call and the same for the whole call, on a GPU as on a CPU (a wrong config that the timer never
picked at the judged sizes was accepted on a GPU); a call in turn runs as a cache hit (no
`reset_to_zero`); outside the trials the autotuner tunes as written, from an empty cache; a
config that does not build here is skipped as Triton's autotuner skips it; `unrun()` counts
the configs still to run."""

from __future__ import annotations

PROBE = r"""
import contextlib, json, sys
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

@triton.autotune(configs=configs, key=["n"], reset_to_zero=["z_ptr"])
@triton.jit
def _which(y_ptr, z_ptr, n, B: tl.constexpr):
    tl.store(y_ptr, B)
    tl.atomic_add(z_ptr, 1)

def blocks(calls, in_turn=False, launches=1):
    out, zeroed = [], []
    for _ in range(calls):
        y = torch.zeros(launches, dtype=torch.int32)
        z = torch.full((1,), 5, dtype=torch.int32)
        with autotune_turns.in_turn() if in_turn else contextlib.nullcontext():
            for k in range(launches):
                _which[(1,)](y[k:], z, 4)
        out.append([int(v) for v in y] if launches > 1 else int(y.item()))
        zeroed.append(int(z.item()) == launches)  # reset_to_zero ran before the last launch
    return out, zeroed

before = autotune_turns.unrun()
plain, _ = blocks(2)
turns, zeroed = blocks(4, in_turn=True)
left = autotune_turns.unrun()
twice, _ = blocks(2, in_turn=True, launches=2)
after, _ = blocks(2)
print(json.dumps({"plain": plain, "turns": turns, "after": after, "twice": twice,
                  "zeroed": zeroed, "before": before, "left": left}))
"""


def test_each_config_takes_its_turn_in_the_trials_only(interpreter_probe):
    got = interpreter_probe(PROBE, "plain", "gpu")
    assert got["plain"] == [32, 32]  # the timer's choice
    assert got["turns"][:3] == [8, 16, 32]  # one config per call, those not run yet first
    assert got["left"] == 0
    assert got["twice"][0][0] == got["twice"][0][1]  # one config for the whole call
    assert got["twice"][1][0] == got["twice"][1][1]
    assert got["after"] == [32, 32]  # tuned afresh: the turns left nothing in the cache
    assert not any(got["zeroed"])  # a call in turn is a cache hit: no reset_to_zero


def test_always_in_turn_on_a_cpu(interpreter_probe):
    got = interpreter_probe(PROBE, "plain", "cpu")
    assert got["plain"] == [8, 8]  # outside the trials' calls: the first call's config
    assert got["turns"][:3] == [8, 16, 32] and got["left"] == 0


def test_a_config_that_does_not_build_is_skipped(interpreter_probe):
    got = interpreter_probe(PROBE, "broken", "gpu")
    assert got["plain"] == [32, 32]
    assert 8 not in got["turns"]
    assert set(got["turns"]) == {16, 32}
    assert got["left"] == 0  # a config that does not build is not waited for
