"""The static rule `autotune-atomics` (kbot/evaluate/autotune_atomics.py): an autotuned kernel
that adds atomically into a buffer its `reset_to_zero` does not name is wrong at the
autotuner's tuning call, which no trial makes; honest kernels that restore the buffer, atomics
that repeat harmlessly and autotuners of one config pass."""

import ast
import textwrap

import pytest

from kbot.evaluate import autotune_atomics
from kbot.evaluate.names import Aliases

CONFIGS = "[triton.Config({'B': 32}), triton.Config({'B': 64})]"


def _reasons(source: str):
    tree = ast.parse(textwrap.dedent(source))
    return autotune_atomics.check(tree, Aliases.of(tree))


def _kernel(body: str, tuner: str = f"configs={CONFIGS}, key=['n']", helper: str = "") -> str:
    return (
        "import triton\nimport triton.language as tl\n\n"
        + helper
        + f"@triton.autotune({tuner})\n@triton.jit\n"
        + "def _k(x_ptr, y_ptr, idx_ptr, n, offset, B: tl.constexpr):\n"
        + "    row = tl.program_id(0)\n    cols = tl.arange(0, B)\n"
        + "    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
    )


@pytest.mark.parametrize(
    "body",
    [
        "tl.atomic_add(y_ptr + row, tl.sum(x, axis=0))",
        "out = y_ptr + row\ntl.atomic_add(out, tl.sum(x, axis=0))",
        "tl.atomic_xor(y_ptr + row, 1)",
        "target = tl.load(idx_ptr + row)\ntl.atomic_add(y_ptr + target, x, mask=cols < n)",
        "tl.atomic_add(pointer=y_ptr + row, val=tl.sum(x, axis=0))",
    ],
)
def test_an_accumulating_atomic_without_a_reset_is_refused(body):
    (reason,) = _reasons(_kernel(body))
    assert reason.rule == "autotune-atomics" and "`y_ptr`" in reason.message
    assert "reset_to_zero" in reason.message


def test_an_atomic_in_a_helper_the_kernel_calls_is_followed_to_the_kernels_argument():
    helper = "@triton.jit\ndef _accumulate(dst, value):\n    tl.atomic_add(dst, value)\n\n\n"
    (reason,) = _reasons(_kernel("_accumulate(y_ptr + row, tl.sum(x, axis=0))", helper=helper))
    assert "`y_ptr`" in reason.message


@pytest.mark.parametrize(
    "body, tuner",
    [
        # the buffer restored while the autotuner tunes
        ("tl.atomic_add(y_ptr + row, tl.sum(x, axis=0))",
         f"configs={CONFIGS}, key=['n'], reset_to_zero=['y_ptr']"),
        ("tl.atomic_add(y_ptr + offset + row, tl.sum(x, axis=0))",
         f"configs={CONFIGS}, key=['n'], restore_value=('y_ptr',)"),
        ("target = tl.load(idx_ptr + row)\ntl.atomic_add(y_ptr + target, x, mask=cols < n)",
         f"configs={CONFIGS}, key=['n'], reset_to_zero='y_ptr'"),
        # atomics that leave the same value when repeated
        ("tl.atomic_max(y_ptr + row, tl.max(x, axis=0))", f"configs={CONFIGS}, key=['n']"),
        ("tl.atomic_xchg(y_ptr + row, 1.0)", f"configs={CONFIGS}, key=['n']"),
        # one config: nothing is tuned
        ("tl.atomic_add(y_ptr + row, tl.sum(x, axis=0))",
         "configs=[triton.Config({'B': 32})], key=['n']"),
    ],
)  # fmt: skip
def test_restored_buffers_idempotent_atomics_and_one_config_pass(body, tuner):
    assert _reasons(_kernel(body, tuner)) == []


def test_a_kernel_without_autotune_may_add_atomically():
    source = _kernel("tl.atomic_add(y_ptr + row, tl.sum(x, axis=0))").replace(
        f"@triton.autotune(configs={CONFIGS}, key=['n'])\n", ""
    )
    assert _reasons(source) == []
