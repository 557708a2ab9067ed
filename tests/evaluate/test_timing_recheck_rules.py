"""The timed CUDA graph's check on fresh inputs judges with the correctness trials' rules: the
tolerance of the reference's own rounding and the retry one precision up with the reference's
noise allowed. With a stricter rule of its own it rejected, at the timing stage, kernels the
trials had accepted (H200, 2026-12-03: KernelBench L2/23's GroupNorm mean, all cancellation;
gpt-fast's RMSNorm, whose fp32 output carries bf16-rounded values: "the timed CUDA graph is
wrong on fresh inputs: 87 of 16777216 elements outside atol 0.0001"). Run on the CPU with a
stand-in for the candidate's timed graph."""

import types
from pathlib import Path

import torch

from kbot.evaluate.rounding import coarsest_rounding
from kbot.evaluate.timed_checks import audit_candidate
from kbot.problem.runtime import import_file, init_inputs, seeded_inputs

PROBLEMS = Path(__file__).parents[1] / "codegen" / "problems"

BF16_INSIDE_FP32 = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """gpt-fast's RMSNorm: normalised in fp32, rounded to bf16, times an fp32 weight."""

    def __init__(self, dim=4096):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(dim))

    def forward(self, x):
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)
        return normed.type_as(x) * self.weight


CASES = [dict(T=2048)]


def get_inputs(T=64):
    return [torch.randn(T, 4096, dtype=torch.bfloat16)]


def get_init_inputs():
    return [4096]
'''


class _TimedGraph:
    """What RemoteImplementation offers the audit: the clock check and a re-run on fresh
    inputs, here computed by `kernel` in this process."""

    calls_per_replay = 1

    def __init__(self, kernel):
        self.kernel = kernel

    def clock_check(self):
        return None

    def recheck(self, fresh, copy=0):
        return self.kernel(*fresh)


def _audit(problem, kernel, atol=None, rtol=None):
    torch.manual_seed(0)
    model = problem.Model(*init_inputs(problem)).eval()
    case = dict(problem.CASES[0])
    inputs = seeded_inputs(problem, case, 0, torch.device("cpu"))
    job = types.SimpleNamespace(atol=atol, rtol=rtol, mutates_inputs=False)
    with torch.no_grad():
        rounded_to = coarsest_rounding(model, inputs)
        return audit_candidate(_TimedGraph(kernel), inputs, model, problem, case, job, rounded_to)


def test_an_fp32_output_of_bf16_values_is_judged_with_bf16s_tolerance(tmp_path):
    path = tmp_path / "bf16_inside_fp32.py"
    path.write_text(BF16_INSIDE_FP32)
    problem = import_file(path, prefix="kbot_test_recheck")
    torch.manual_seed(0)
    weight = problem.Model(4096).weight.detach()

    def kernel(x):  # the same math with the sum in another order: one bf16 ulp off at places
        xf = x.double()
        normed = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).float()
        return (normed.to(torch.bfloat16).float() * weight,)

    assert _audit(problem, kernel) is None

    def wrong(x):
        return (kernel(x)[0] * 1.05,)

    failure = _audit(problem, wrong)
    assert failure is not None and failure.rule == "mismatch"
    assert "wrong on fresh inputs" in failure.message


def test_an_output_that_is_all_cancellation_gets_the_retry_one_precision_up():
    problem = import_file(PROBLEMS / "staged_groupnorm_mean_cancels.py", prefix="kbot_test_rc")
    torch.manual_seed(0)
    model = problem.Model(*init_inputs(problem)).eval()
    exact = model.double()

    def kernel(*inputs):  # a correct kernel whose rounding differs from the reference's
        with torch.no_grad():
            out = exact(*[v.double() if torch.is_tensor(v) else v for v in inputs])
        return (out.float(),)

    assert _audit(problem, kernel) is None

    def constant(*inputs):
        return (torch.zeros_like(kernel(*inputs)[0]),)

    failure = _audit(problem, constant)
    assert failure is not None


def test_an_op_that_writes_its_inputs_gets_no_retry():
    """The retry re-runs the reference; for an op that writes into its inputs the audit keeps
    the strict comparison (as the correctness trials do)."""
    from kbot.evaluate.judgement import judge_outputs

    ref = torch.tensor([1e-8, -1e-8])
    out = torch.tensor([-1e-8, 1e-8])
    result, retried = judge_outputs((out,), (ref,), [], None, None, None, False, None)
    assert result.failure is not None and not retried


def test_a_graph_that_reuses_its_last_answer_while_a_sample_is_unchanged_is_rejected(
    tmp_path, monkeypatch
):
    """Red-team round twelve: a timed graph that checks two of its inputs' values against the
    last call's and answers as before when they match timed less work than the op (its replays
    never changed their inputs). The recheck calls it again with a few values changed (here
    one, so that the two it checks stay as they were but for odds of 1 in 4 million)."""
    import kbot.evaluate.timed_checks as timed_checks

    monkeypatch.setattr(timed_checks, "CHANGED_SHARE", 0.0)
    path = tmp_path / "bf16_inside_fp32.py"
    path.write_text(BF16_INSIDE_FP32)
    problem = import_file(path, prefix="kbot_test_recheck_memo")
    torch.manual_seed(0)
    model = problem.Model(4096).eval()
    memo = {}

    def kernel(x):
        with torch.no_grad():
            key = (x[0, 0].item(), x[-1, -1].item())
            if key not in memo:
                memo.clear()
                memo[key] = model(x)
            return (memo[key],)

    failure = _audit(problem, kernel)
    assert failure is not None and failure.rule == "mismatch"
    assert "once a few of its inputs' values change" in failure.message


def test_a_few_values_change_from_another_draw_and_the_rest_stay():
    from kbot.evaluate.timed_checks import CHANGED_SHARE, partly_changed

    x, other = torch.randn(256, 64), torch.rand(256, 64) + 10  # the other draw: all above 10
    index = torch.arange(5)
    changed = partly_changed([x, index, 2.0], [other, index, 2.0])
    assert changed[1] is index and changed[2] == 2.0
    moved = changed[0] != x
    assert torch.equal(changed[0][moved], other[moved]) and torch.equal(
        changed[0][~moved], x[~moved]
    )
    assert 1 <= int(moved.sum()) < 4 * CHANGED_SHARE * x.numel()
    one = torch.randn(1)
    assert not torch.equal(partly_changed([one], [one + 1])[0], one)  # at least one value


def test_jitter_changes_every_value_a_little_keeping_signs():
    from kbot.evaluate.timing import JITTER, jitter_

    x = torch.randn(1000, 33)
    before = x.clone()
    strided = torch.randn(40, 20).t()
    strided_before = strided.clone()
    positions = torch.arange(7)
    row = torch.randn(1, 64)
    row_before = row.clone()
    expanded = row.expand(8, 64)  # stride 0: every row the same memory
    jitter_([x, strided, positions, 3.0, expanded], torch.Generator().manual_seed(1))
    assert not torch.equal(row, row_before)  # scaled once through its storage
    assert ((row / row_before - 1).abs() <= JITTER + 1e-6).all()
    ratio = x / before
    assert ((ratio >= 1 - JITTER - 1e-6) & (ratio <= 1 + JITTER + 1e-6)).all()
    assert (x != before).float().mean() > 0.99 and (torch.sign(x) == torch.sign(before)).all()
    assert not torch.equal(strided, strided_before)
    assert torch.equal(positions, torch.arange(7))


def test_many_small_inputs_share_one_table_of_factors_moved_each_replay():
    """A decode-size op's hundreds of copies: one draw per tensor took most of a replay's
    budget on an H100 (70 samples where 100 were due), so they are scaled by windows of one
    table in a `torch._foreach_mul_` per dtype; each replay moves the windows."""
    from kbot.evaluate.timing import _FEW, JITTER, Jitter

    copies = [[torch.randn(2, 64), torch.arange(2), torch.randn(64, dtype=torch.bfloat16)]
              for _ in range(_FEW)]  # fmt: skip
    tensors = [v for copy in copies for v in copy]
    before = [t.clone() for t in tensors]
    jitter = Jitter(tensors, torch.Generator().manual_seed(3))
    assert len(jitter.groups) == 2  # fp32 and bf16
    seen = []
    for _ in range(3):
        jitter()
        seen.append([t.clone() for t in tensors])
    for step in range(1, 3):  # every floating value changes at every replay
        for old, new in zip(seen[step - 1], seen[step]):
            if new.is_floating_point():
                assert (old != new).float().mean() > 0.8
    for old, new in zip(before, tensors):
        if not new.is_floating_point():
            assert torch.equal(old, new)
        else:
            ratio = (new.double() / old.double()).abs()
            low, high = (1 - JITTER) ** 3 * 0.98, (1 + JITTER) ** 3 * 1.02
            assert ((ratio >= low) & (ratio <= high)).all()
