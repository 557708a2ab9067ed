"""An fp32 output that the reference rounded through bf16 on its way (a norm computed in fp32,
`.type_as(x)` for bf16 x, times an fp32 weight) is judged with bf16's tolerance; one computed in
fp32 from bf16 inputs without such a rounding keeps fp32's."""

import pytest
import torch

from kbot.evaluate.compare import compare_outputs
from kbot.evaluate.rounding import coarsest_rounding, tolerance_dtype


class NormRoundedMidway(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(64))  # fp32, as gpt-fast's RMSNorm

    def forward(self, x):
        y = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
        return y.type_as(x) * self.weight


class Fp32FromBf16Inputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(16, 64).to(torch.bfloat16))

    def forward(self, x, positions):
        # indexing a bf16 table and casting up round nothing
        return x.float() * self.table[positions].float()


class HalfArithmetic(torch.nn.Module):
    def forward(self, x):
        return (x * 2 + 1).float()


def test_a_rounding_to_bf16_midway_is_found():
    x = torch.randn(4, 64).to(torch.bfloat16)
    assert coarsest_rounding(NormRoundedMidway(), [x]) is torch.bfloat16


def test_data_movement_and_casts_up_are_not_roundings():
    x = torch.randn(4, 64).to(torch.bfloat16)
    positions = torch.tensor([0, 3, 5, 15])
    assert coarsest_rounding(Fp32FromBf16Inputs(), [x, positions]) is None


def test_arithmetic_in_half_precision_is_a_rounding():
    x = torch.randn(4, 64).to(torch.float16)
    assert coarsest_rounding(HalfArithmetic(), [x]) is torch.float16


def test_a_reference_that_fails_raises_its_own_error():
    class Broken(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("no")

    with pytest.raises(RuntimeError, match="no"):
        coarsest_rounding(Broken(), [torch.randn(2)])


def test_one_bf16_ulp_in_an_fp32_output_passes_only_with_the_rounding_known():
    torch.manual_seed(0)
    x = torch.randn(64, 64).to(torch.bfloat16)
    reference = NormRoundedMidway()(x).detach()
    # a kernel whose fp32 math lands on the other side of a bf16 rounding boundary
    shifted = reference.clone()
    bits = reference.view(-1)[::97].to(torch.bfloat16).view(torch.int16)
    shifted.view(-1)[::97] = (bits + 1).view(torch.bfloat16).float()  # one bf16 ulp away
    assert not torch.equal(shifted, reference)
    strict = compare_outputs((shifted,), (reference,), None, None)
    assert strict.failure is not None and strict.failure.rule == "mismatch"
    judged = compare_outputs((shifted,), (reference,), None, None, rounded_to=torch.bfloat16)
    assert judged.failure is None


def test_the_tolerance_dtype_only_coarsens_fine_outputs():
    assert tolerance_dtype(torch.float32, torch.bfloat16) is torch.bfloat16
    assert tolerance_dtype(torch.float32, None) is torch.float32
    assert tolerance_dtype(torch.bfloat16, torch.float16) is torch.bfloat16


class ConvEpilogue(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.proj = torch.nn.Linear(6, 6)

    def forward(self, x):
        return self.proj(torch.relu(self.conv(x)))


def test_a_tf32_convolution_or_matmul_on_a_gpu_rounds_to_fp16_precision(monkeypatch):
    # PyTorch runs fp32 convolutions in TF32 on a GPU by default (fp16's 10-bit mantissa): the
    # reference as written is that coarse there, and a kernel is judged with fp16's tolerance.
    # Where TF32 is not allowed (matmuls by default) or on the CPU, fp32's stays.
    import kbot.evaluate.rounding as rounding

    x = torch.randn(2, 3, 8, 8)
    assert coarsest_rounding(ConvEpilogue(), [x]) is None  # on the CPU: IEEE fp32
    monkeypatch.setattr(rounding, "_on_gpu", lambda tensor: True)
    allowed = {"convolution": True, "matmul": False}
    monkeypatch.setattr(
        rounding,
        "tf32_allowed",
        lambda convolution: allowed["convolution" if convolution else "matmul"],
    )
    assert coarsest_rounding(ConvEpilogue(), [x]) is torch.float16
    allowed["convolution"] = False
    assert coarsest_rounding(ConvEpilogue(), [x]) is None
    allowed["matmul"] = True
    assert coarsest_rounding(ConvEpilogue(), [x]) is torch.float16
    # bf16 arithmetic beside a TF32 convolution: bf16 is the coarser
    assert coarsest_rounding(HalfArithmeticAfterConv(), [x]) is torch.bfloat16


class HalfArithmeticAfterConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return (self.conv(x).to(torch.bfloat16) * 2).float()
