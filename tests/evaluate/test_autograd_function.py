"""Launchers wrapped in a torch.autograd.Function (Liger's and many LLM-written kernels' style):
`F.apply(...)` runs F.forward, which the forward check follows like a helper, with a `ctx` that
may only save what backward needs. What the wrapper could hide stays refused."""

import textwrap

from kbot.evaluate.static import check_source
from kbot.problem.spec import ProblemOptions

KERNEL = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)

"""

CTX_STYLE = """\
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        _double[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
        ctx.save_for_backward(x)
        ctx.scale = 2
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.scale
"""

SETUP_CONTEXT_STYLE = """\
class Double(torch.autograd.Function):
    @staticmethod
    def forward(x):
        out = torch.empty_like(x)
        Double._launch(x, out)
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output)

    @staticmethod
    def _launch(x, out):
        _double[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
"""

MODEL = """
class ModelNew(nn.Module):
    def forward(self, x):
        return {call}
"""


def reasons(function_class: str, call: str = "Double.apply(x)") -> list[str]:
    source = KERNEL + textwrap.dedent(function_class) + MODEL.format(call=call)
    return [f"{r.rule}: {r.message}" for r in check_source(source, ProblemOptions())]


def test_ctx_style_function_passes():
    assert reasons(CTX_STYLE) == []


def test_setup_context_style_with_a_static_helper_passes():
    assert reasons(SETUP_CONTEXT_STYLE) == []


def test_torch_compute_inside_the_function_is_refused():
    body = CTX_STYLE.replace("return out\n", "return out + x\n", 1)
    found = reasons(body)
    assert any("torch-compute-in-forward" in r and "out + x" in r for r in found), found


def test_torch_compute_in_setup_context_is_refused():
    body = SETUP_CONTEXT_STYLE.replace("ctx.mark_non_differentiable(output)", "output.mul_(1.0)")
    assert any("torch-compute-in-forward" in r for r in reasons(body))


def test_forward_called_directly_is_refused():
    found = reasons(CTX_STYLE, call="Double.forward(None, x)")
    assert any("through `Double.apply" in r for r in found), found


def test_ctx_does_no_more_than_save():
    body = CTX_STYLE.replace("ctx.save_for_backward(x)", "ctx.compute(x)")
    assert any("an autograd ctx only saves" in r for r in reasons(body))


def test_overriding_apply_is_refused():
    body = CTX_STYLE + textwrap.indent(
        "\n@classmethod\ndef apply(cls, x):\n    return x * 2\n", "    "
    )
    assert any("overrides torch.autograd.Function's `apply`" in r for r in reasons(body))


def test_other_decorators_are_refused():
    body = CTX_STYLE.replace(
        "    @staticmethod\n    def forward", "    @staticmethod\n    @custom_fwd\n    def forward"
    )
    assert any(r.startswith("decorators") for r in reasons(body))


def test_a_function_class_with_a_metaclass_is_refused():
    body = CTX_STYLE.replace(
        "(torch.autograd.Function)", "(torch.autograd.Function, metaclass=type)"
    )
    assert any("metaclass" in r for r in reasons(body))


def test_a_wrong_kernel_behind_apply_is_rejected(evaluator, problem, candidate):
    wrong = candidate("silu_and_mul_autograd").replace(
        "y = gate * tl.sigmoid(gate) * up", "y = gate * up"
    )
    verdict = evaluator.evaluate(problem("silu_and_mul"), wrong, "wrong_autograd.py")
    assert not verdict.accepted
    assert verdict.stage.value == "correctness", verdict.stage
