"""Traces started from several threads at once (the inductor proposers extract side by side,
each extraction tracing the problem for its leading-rows plan) leave FX's process-wide
"is tracing" flag as they found it: once it stayed set, and every torch.compile'd function
called afterwards in the process raised "Detected that you are using FX to symbolically trace a
dynamo-optimized function"."""

from __future__ import annotations

import threading
from pathlib import Path

import torch.fx._symbolic_trace as symbolic_trace

from kbot.problem import load_problem
from kbot.propose.codegen.trace import trace_problem

BENCH = Path(__file__).parents[2] / "bench" / "problems"


def test_traces_in_threads_leave_fx_not_tracing():
    specs = [load_problem(BENCH / f"{op}.py") for op in ("rmsnorm", "silu_and_mul", "softcap")]
    errors: list[BaseException] = []

    def trace(spec):
        try:
            for _ in range(3):
                trace_problem(spec)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=trace, args=(spec,)) for spec in specs * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert not symbolic_trace.is_fx_tracing()
