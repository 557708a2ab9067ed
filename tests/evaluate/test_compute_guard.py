"""The compute guard (kbot.evaluate.compute_guard) on its own: what a launcher may run with
torch, what it may not, and how Triton launches lift it while grid functions stay under it."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from kbot.evaluate.compute_guard import ComputeGuard, extern_aten, guarding
from kbot.evaluate.launch_hooks import install_launch_hooks


def _run(fn, extern=()):
    guard = ComputeGuard(extern_aten(extern))
    error = None
    with torch.no_grad(), guarding(guard):
        try:
            result = fn()
        except RuntimeError as exc:
            result, error = None, exc
    return guard, result, error


def test_a_launcher_may_allocate_view_query_and_copy_its_own_buffers():
    x = torch.randn(6, 8)

    def launcher():
        out = torch.empty_like(x)
        scratch = torch.zeros(3, dtype=torch.int32)
        scratch.fill_(2)
        laid_out = out.t().contiguous()  # a copy of a buffer forward made
        again = torch.empty_like(laid_out)
        again.copy_(laid_out)
        flat = x[:2].reshape(-1).contiguous()  # already contiguous: no copy runs
        assert x.is_contiguous() and x.size(0) == 6 and laid_out.stride(0) == 6
        return out, again, flat.numel(), torch.tensor([1.0, 2.0]), torch.arange(4)

    guard, result, error = _run(launcher)
    assert error is None and guard.violations == []
    assert guard.copied_outputs(result[:2]) == []  # fresh buffers are not copies


@pytest.mark.parametrize(
    "copy",
    [
        lambda x: x.t().contiguous(),  # a transposing copy can be the whole op
        lambda x: x.clone(),
        lambda x: torch.empty_like(x).copy_(x),
        lambda x: x.new_tensor(x),
    ],
)
def test_copying_the_inputs_values_is_refused_without_an_extern_op(copy):
    x = torch.randn(4, 6)
    guard, _, _ = _run(lambda: copy(x))
    assert guard.violations and "inputs' values" in guard.violations[0]
    guard, _, _ = _run(lambda: copy(x), extern=("matmul",))  # operands of a declared GEMM
    assert guard.violations == []


@pytest.mark.parametrize(
    "cast",
    [
        lambda out: out.to(torch.bfloat16),
        lambda out: out.to(torch.int32).to(torch.float32),  # a trunc by two casts
        lambda out: torch.empty(out.shape, dtype=torch.float16).copy_(out),
    ],
)
def test_a_cast_is_refused_even_of_a_buffer_forward_made(cast):
    guard, _, _ = _run(lambda: cast(torch.ones(4, 6)))
    assert guard.violations and "dtype" in guard.violations[0]


@pytest.mark.parametrize(
    "compute",
    [
        lambda x: torch.nn.functional.silu(x),
        lambda x: x * 2,
        lambda x: x.sum(),
        lambda x: torch.cat([x, x]),
        lambda x: x.index_select(0, torch.tensor([0, 1])),
        lambda x: torch.empty_like(x).fill_(x[0, 0]),  # filling with a tensor's value
        lambda x: torch.mm(x, x.t()),  # no extern declared
    ],
)
def test_computing_with_torch_is_refused_even_when_the_error_is_swallowed(compute):
    x = torch.randn(4, 4)

    def swallowing():
        try:
            compute(x)
        except RuntimeError:
            pass
        return torch.empty(1)

    guard, _, error = _run(swallowing)
    assert error is None  # the candidate caught it ...
    assert guard.violations  # ... the guard still knows


def test_declared_extern_ops_run():
    x, w, b = torch.randn(4, 8), torch.randn(6, 8), torch.randn(6)
    guard, result, _ = _run(lambda: torch.nn.functional.linear(x, w, b), extern=("linear",))
    assert guard.violations == [] and result.shape == (4, 6)
    image, kernel = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    guard, _, _ = _run(lambda: torch.nn.functional.conv2d(image, kernel), extern=("conv2d",))
    assert guard.violations == []
    guard, _, _ = _run(lambda: torch.nn.functional.conv2d(image, kernel), extern=("matmul",))
    assert guard.violations  # declared matmul does not cover a convolution


def test_an_output_that_is_a_torch_copy_of_the_inputs_is_found():
    """Where copies of the inputs are allowed (an extern op declared), an output holding one is
    still refused, also after a second copy into a buffer forward made."""
    x = torch.randn(5, 3)

    def launder():
        first = x.new_tensor(x.t())
        second = torch.empty_like(first)
        second.copy_(first)
        return first, x.t().contiguous(), second, torch.empty(2)

    guard, result, _ = _run(launder, extern=("matmul",))
    assert guard.violations == []
    assert guard.copied_outputs(result) == [0, 1, 2]


KERNELS = """
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


@triton.jit
def noop_kernel(X: tl.constexpr, n):
    pass
"""


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    path = tmp_path / "guard_kernels.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("guard_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["guard_kernels"] = module
    spec.loader.exec_module(module)
    install_launch_hooks()
    yield module
    sys.modules.pop("guard_kernels", None)


def test_a_launch_lifts_the_guard_and_its_grid_function_does_not(kernels):
    x = torch.randn(16)

    def honest():
        out = torch.empty_like(x)
        kernels.copy_kernel[(1,)](x, out, 16, BLOCK=16)  # the interpreter runs torch itself
        return out

    guard, out, error = _run(honest)
    assert error is None and guard.violations == [] and torch.equal(out, x)

    def grid_computes():
        out = torch.empty_like(x)

        def grid(meta):
            out.copy_(torch.sigmoid(x))
            return (1,)

        kernels.copy_kernel[grid](x, out, 16, BLOCK=16)
        return out

    guard, _, _ = _run(grid_computes)
    assert "sigmoid" in guard.violations


def test_a_tensor_passed_as_constexpr_is_refused(kernels):
    x = torch.randn(8)
    guard, _, error = _run(lambda: kernels.noop_kernel[(1,)](x, 8))
    assert error is not None and guard.violations and "constexpr" in guard.violations[0]


def test_a_tensor_passed_as_constexpr_is_refused_beside_launch_options(kernels):
    x = torch.randn(8)
    guard, _, error = _run(lambda: kernels.noop_kernel[(1,)](x, 8, num_warps=4))
    assert error is not None and guard.violations and "constexpr" in guard.violations[0]


def test_an_op_outside_aten_is_refused_whatever_its_name():
    library = torch.library.Library("kbot_guard_test", "DEF")  # noqa: TOR901 - the attack
    library.define("empty(Tensor x) -> Tensor")
    library.impl("empty", lambda x: torch.sigmoid(x), "CompositeExplicitAutograd")
    x = torch.randn(4)
    guard, _, error = _run(lambda: torch.ops.kbot_guard_test.empty(x))
    assert error is not None and guard.violations == ["kbot_guard_test::empty"]


def test_extern_calls_beyond_the_references_count_are_refused():
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    guard = ComputeGuard(extern_aten(["matmul"]), extern_calls=1)
    with torch.no_grad(), guarding(guard):
        torch.mm(x, w)
        with pytest.raises(RuntimeError):
            torch.mm(x, w)
    assert "extern call 2 where the reference makes 1" in guard.violations[0]


def test_a_timer_runs_its_own_torch_lifted_and_what_it_times_under_the_guard():
    from kbot.evaluate.launch_hooks import _lifted_timer

    def timer(fn):  # a stand-in for triton.testing.do_bench: it summarises with torch
        fn()
        return float(torch.tensor([1.0, 2.0, 3.0]).median())

    x = torch.randn(4)
    guard, result, error = _run(lambda: _lifted_timer(timer)(lambda: None))
    assert error is None and guard.violations == [] and result == 2.0
    guard, _, _ = _run(lambda: _lifted_timer(timer)(lambda: torch.sigmoid(x)))
    assert "sigmoid" in guard.violations


def test_the_autotuners_candidate_hooks_run_under_the_guard():
    from types import SimpleNamespace

    from kbot.evaluate.launch_hooks import _lifted_bench

    x = torch.randn(4)

    def bench(self, *args, config, **meta):  # Autotuner._bench: its hooks, then a quantile
        if config.pre_hook is not None:
            config.pre_hook({})
        self.pre_hook({})
        return torch.tensor([1.0, 2.0]).quantile(0.5)

    triton_hook = lambda nargs: x.clone()  # noqa: E731 - Triton's own restore_value
    tuner = SimpleNamespace(pre_hook=triton_hook, user_defined_pre_hook=False)
    honest = SimpleNamespace(pre_hook=None)
    guard, _, error = _run(lambda: _lifted_bench(bench)(tuner, config=honest))
    assert error is None and guard.violations == []
    config = SimpleNamespace(pre_hook=lambda nargs: torch.sigmoid(x))
    guard, _, _ = _run(lambda: _lifted_bench(bench)(tuner, config=config))
    assert "sigmoid" in guard.violations
    assert config.pre_hook is not None and tuner.pre_hook is triton_hook  # put back


def test_a_matmul_that_adds_a_whole_tensor_is_allowed_only_as_often_as_the_reference():
    x, w, r, bias = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4), torch.randn(4)
    for fused, expect in ((0, ["addmm"]), (1, [])):
        guard = ComputeGuard(extern_aten(["matmul"]), extern_calls=1, fused_adds=fused)
        with torch.no_grad(), guarding(guard):
            try:
                torch.addmm(r, x, w)  # the residual added by the GEMM: the epilogue in torch
            except RuntimeError:
                pass
        assert [v.split(",")[0] for v in guard.violations] == expect
    guard = ComputeGuard(extern_aten(["matmul"]), extern_calls=1, fused_adds=0)
    with torch.no_grad(), guarding(guard):
        torch.addmm(bias, x, w)  # a bias row, as torch.compile's own addmm adds it
    assert guard.violations == []


def test_new_tensor_of_tensor_values_is_refused(kernels):
    x = torch.randn(3, 3)
    for build in (
        lambda: x.new_tensor([[x[j, i] for j in range(3)] for i in range(3)]),
        lambda: torch.asarray([x[i, 0] for i in range(3)]),
    ):
        guard, _, error = _run(build)
        assert error is not None and "tensor values" in guard.violations[0]
    guard, out, error = _run(lambda: x.new_tensor([1.0, 2.0]))  # numbers: an allocation
    assert error is None and guard.violations == []


def test_the_references_fused_attention_counts_as_its_two_matmuls():
    """F.scaled_dot_product_attention reaches the dispatcher as one fused op: with `bmm`
    declared, a candidate may run Q K^T and P V as extern bmm calls (its kernel the softmax),
    and no more matmul work than that (KernelBench L1/97: every candidate was refused)."""
    from kbot.evaluate.compute_guard import ExternCount

    q, k, v = torch.randn(2, 3, 16, 8), torch.randn(2, 3, 24, 8), torch.randn(2, 3, 24, 4)
    counted = ExternCount(extern_aten(["bmm"]))
    with torch.no_grad(), counted:
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert (counted.calls, counted.flops) == (2, 6 * 16 * 24 * (8 + 4))
    limits = dict(extern_calls=counted.calls, extern_flops=counted.flops)
    qb, kb, vb = q.reshape(6, 16, 8), k.reshape(6, 24, 8), v.reshape(6, 24, 4)
    guard = ComputeGuard(extern_aten(["bmm"]), **limits)
    with torch.no_grad(), guarding(guard):
        scores = torch.bmm(qb, kb.transpose(1, 2))
        torch.bmm(scores, vb)  # the softmax would be the candidate's kernel, between the two
    assert guard.violations == []
    guard = ComputeGuard(extern_aten(["bmm"]), **limits)
    with torch.no_grad(), guarding(guard):
        torch.bmm(qb, kb.transpose(1, 2))
        with pytest.raises(RuntimeError):  # Q K^T twice: more matmul work than the reference
            torch.bmm(torch.bmm(qb, kb.transpose(1, 2)), vb)
    assert "where the reference's make 27648" in guard.violations[0]
    undeclared = ExternCount(extern_aten(["conv2d"]))
    with torch.no_grad(), undeclared:
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert (undeclared.calls, undeclared.flops) == (0, 0)
