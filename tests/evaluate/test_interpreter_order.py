"""Triton's CPU interpreter running a launch's programs in a random order
(kbot.evaluate.interpreter_order): every program still runs once, the order changes from launch
to launch, and a kernel whose programs race is wrong on a CPU as it can be on a GPU."""

from __future__ import annotations

# Runs in a child: the patch changes the interpreter of the process that installs it.
PROBE = r"""
import json, sys
import torch, triton, triton.language as tl
from kbot.evaluate import interpreter_order

@triton.jit
def _record(order_ptr, counter_ptr):
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    slot = tl.atomic_add(counter_ptr, 1)
    tl.store(order_ptr + slot, pid)

@triton.jit
def _carry(x_ptr, out_ptr, B: tl.constexpr):
    # each program adds the previous program's last output: a race without a flag
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    carry = tl.load(out_ptr + pid * B - 1, mask=pid > 0, other=0.0)
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0) + carry)

if sys.argv[-1] == "install":
    interpreter_order.install()
orders = []
for _ in range(3):
    order, counter = torch.full((24,), -1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    _record[(4, 6)](order, counter)
    orders.append(order.tolist())
x = torch.ones(64 * 16)
out = torch.zeros_like(x)
_carry[(64,)](x, out, B=16)
print(json.dumps({
    "orders": orders,
    "race_right": bool(torch.equal(out, torch.cumsum(x, 0))),
}))
"""


def test_the_plain_interpreter_runs_programs_in_order_and_hides_a_race(interpreter_probe):
    result = interpreter_probe(PROBE, "plain")
    assert all(order == list(range(24)) for order in result["orders"])
    assert result["race_right"]


def test_programs_run_once_each_in_a_new_order_every_launch(interpreter_probe):
    result = interpreter_probe(PROBE, "install")
    orders = result["orders"]
    assert all(sorted(order) == list(range(24)) for order in orders)
    assert any(order != list(range(24)) for order in orders)
    assert len({tuple(order) for order in orders}) > 1
    assert not result["race_right"]
