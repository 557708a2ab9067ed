"""torch.compile's extern calls written as the extern ops a problem declares: an nn.Linear with
a bias compiles to `extern_kernels.addmm` (F.linear with the bias where only `linear` is
declared), a convolution to `extern_kernels.convolution` (aten.convolution: F.convNd or
F.conv_transposeNd). Before, both made the extraction give up, so on KernelBench's GEMM and
convolution problems torch.compile's own kernels never reached the search (H200, 2026-12-03)."""

import ast

import pytest
import torch

from kbot.propose.inductor.externs import convolution_call, extern_call
from kbot.propose.inductor.records import Unsupported
from kbot.propose.inductor.wrapper import _Expressions

CONV = (
    "extern_kernels.convolution(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2), "
    "transposed={transposed}, output_padding={output_padding}, groups=2)"
)


def _call(text: str) -> ast.Call:
    return ast.parse(text, mode="eval").body


@pytest.mark.parametrize(
    ("transposed", "output_padding", "shapes", "op"),
    [
        (False, "(0, 0)", ((2, 4, 9, 8), (6, 2, 3, 2), (6,)), "conv2d"),
        (True, "(1, 0)", ((2, 4, 9, 8), (4, 3, 3, 2), (6,)), "conv_transpose2d"),
    ],
)
def test_convolution_becomes_the_declared_functional_op_with_the_same_result(
    transposed, output_padding, shapes, op
):
    call = _call(CONV.format(transposed=transposed, output_padding=output_padding))
    text = convolution_call(call, _Expressions({}, {}), (op,))
    assert text.startswith(f"torch.nn.functional.{op}(x, w, b, ")
    torch.manual_seed(0)
    x, w, b = (torch.randn(s, dtype=torch.float64) for s in shapes)
    got = eval(text, {"torch": torch, "x": x, "w": w, "b": b})  # noqa: S307 - our own text
    want = torch.ops.aten.convolution(
        x, w, b, [2, 1], [1, 0], [1, 2], transposed, list(ast.literal_eval(output_padding)), 2
    )
    torch.testing.assert_close(got, want)


def test_a_convolution_the_problem_does_not_declare_is_declined():
    call = _call(CONV.format(transposed=False, output_padding="(0, 0)"))
    with pytest.raises(Unsupported, match="must declare 'conv2d' in extern_ops"):
        convolution_call(call, _Expressions({}, {}), ("conv3d", "linear"))


def test_positional_arguments_and_a_missing_bias_are_read_as_aten_orders_them():
    call = _call("extern_kernels.convolution(x, w, None, (1,), (0,), (1,), False, (0,), 1)")
    text = convolution_call(call, _Expressions({}, {}), ("conv1d",))
    assert text == (
        "torch.nn.functional.conv1d(x, w, None, stride=(1,), padding=(0,), dilation=(1,), groups=1)"
    )


def test_addmm_becomes_linear_with_its_bias_where_only_linear_is_declared():
    body = ["buf0 = torch.empty_strided((s0, 64), (64, 1), dtype=torch.float32, device=x.device)"]
    call = _call(
        "extern_kernels.addmm(bias, x, reinterpret_tensor(weight, (32, 64), (1, 32), 0), "
        "alpha=1, beta=1, out=buf0)"
    )
    text = extern_call(call, _Expressions({}, {}), ("linear",), body, {"buf0": 0})
    assert text == (
        "buf0 = torch.nn.functional.linear(x, torch.as_strided(weight, (32, 64), (1, 32), 0).t(), "
        "bias)"
    )
    assert body == [""]  # inductor's buffer is not allocated: F.linear returns its own
    torch.manual_seed(0)
    x, weight, bias = torch.randn(5, 32), torch.randn(64, 32), torch.randn(64)
    got = eval(text.split(" = ", 1)[1], {"torch": torch, "x": x, "weight": weight, "bias": bias})  # noqa: S307
    torch.testing.assert_close(got, torch.addmm(bias, x, weight.t()))


def test_a_scaled_addmm_is_not_a_linear():
    body = ["buf0 = torch.empty_strided((4, 8), (8, 1), dtype=torch.float32, device=x.device)"]
    call = _call("extern_kernels.addmm(bias, x, w, alpha=2, beta=1, out=buf0)")
    with pytest.raises(Unsupported, match="addmm without a plain out= buffer"):
        extern_call(call, _Expressions({}, {}), ("linear",), body, {"buf0": 0})


def test_addmm_without_addmm_or_linear_declared_says_which_to_declare():
    call = _call("extern_kernels.addmm(bias, x, w, out=buf0)")
    with pytest.raises(Unsupported, match="must declare 'addmm' or 'linear' in extern_ops"):
        extern_call(call, _Expressions({}, {}), ("conv2d",), [], {})
