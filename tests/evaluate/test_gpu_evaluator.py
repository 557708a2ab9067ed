"""On a CUDA GPU: timing fields present and sane, compile baselines measured, poisoning turns
unwritten outputs into NaN, crashes cost one candidate, the pool spreads jobs over GPUs."""

import math

import pytest

from kbot.evaluate import EvalOptions, Evaluator, Stage

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_evaluator():
    with Evaluator(EvalOptions(device="cuda", timing_budget_s=0.3, timeout_s=300.0)) as evaluator:
        yield evaluator


@pytest.mark.parametrize(
    "problem_name,candidate_name",
    [
        ("quick_gelu", "quick_gelu"),
        ("add_rmsnorm", "add_rmsnorm"),
        ("softmax_wide", "softmax_wide"),
    ],
)
def test_timed_verdict_is_sane(gpu_evaluator, problem, candidate, problem_name, candidate_name):
    verdict = gpu_evaluator.evaluate(problem(problem_name), candidate(candidate_name))
    assert verdict.accepted, [str(r) for r in verdict.reasons]
    assert verdict.timed and verdict.device != "cpu"
    for result in verdict.cases:
        t = result.timing
        for stat in (t.candidate_graph, t.candidate_plain, t.eager_graph, t.eager_plain):
            assert stat.runs >= 100 and stat.median_us > 0 and stat.iqr_us >= 0
        assert t.compile_graph is not None and t.compile_max_autotune_graph is not None
        assert t.speedup_vs_compile is not None and t.speedup_vs_compile > 0
        assert 0 < t.roofline_fraction <= 1.05
        assert t.bytes_moved > 0
        assert t.speedup_vs_eager > 0
    assert verdict.speedup_geomean("compile") is not None
    assert verdict.to_json()["timed"] is True


def test_unwritten_rows_read_as_poison_on_cuda(gpu_evaluator, problem, candidate):
    verdict = gpu_evaluator.evaluate(problem("silu_and_mul"), candidate("cheat_half_rows"))
    assert not verdict.accepted and verdict.reasons[0].rule in ("nan-inf", "mismatch")


def test_dynamic_cheats_are_rejected_on_cuda(gpu_evaluator, problem, candidate, monkeypatch):
    # with the static rules off: the pointer cache's key, an address, is refused statically
    monkeypatch.setattr("kbot.evaluate.evaluator.check_source", lambda *args, **kwargs: ())
    for name, problem_name, rules in [
        # the cache it keeps between calls is state (seen first since 7870d96), its stale
        # answer a mismatch; the output it returns from that cache overlaps module state
        # (aliasing.refusal, seen first on the H100 at 7dde466)
        ("cheat_pointer_cache", "quick_gelu", ("state-mutated", "mismatch", "output-alias")),
        # it writes its input and returns it: the output's alias is seen first (H100,
        # 2026-12-05) or the write
        ("cheat_input_mutation", "gelu_fp32", ("input-mutated", "output-alias")),
        ("cheat_all_zeros", "softmax_wide", ("near-constant",)),
    ]:
        verdict = gpu_evaluator.evaluate(problem(problem_name), candidate(name))
        assert not verdict.accepted and verdict.reasons[0].rule in rules, verdict.reasons


def test_illegal_memory_access_costs_one_candidate(gpu_evaluator, problem, candidate):
    spec = problem("gelu_fp32")
    crashed = gpu_evaluator.evaluate(spec, candidate("crash_wild_pointer"))
    assert not crashed.accepted
    assert crashed.reasons[0].rule in ("crash", "forward-error", "cuda-graph")
    assert gpu_evaluator.evaluate(spec, candidate("quick_gelu")).accepted


def test_remeasure_times_finalists_together(gpu_evaluator, problem, candidate):
    source = candidate("quick_gelu")
    variant = source.replace("BLOCK = 256", "BLOCK = 128")
    verdicts = gpu_evaluator.remeasure(problem("quick_gelu"), [source, variant])
    assert [v.accepted for v in verdicts] == [True, True], [
        [str(r) for r in v.reasons] for v in verdicts
    ]
    assert all(v.timed for v in verdicts)


def test_pool_over_two_gpus_gives_the_same_verdict_form(problem, candidate):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    with Evaluator(EvalOptions(device="cuda", gpus=(0, 1), timing_budget_s=0.3)) as pool:
        verdicts = pool.evaluate_many(problem("quick_gelu"), [candidate("quick_gelu")] * 4)
        placements = [w.info.placement for w in pool._workers]
    # each judge sees its own GPU alone, as device 0 (bench/multi_gpu.py checks more)
    assert [p["visible_devices"] for p in placements] == ["0", "1"]
    assert all(p["current_device"] == "0" and p["device_count"] == "1" for p in placements)
    assert placements[0]["uuid"] != placements[1]["uuid"]
    assert all(v.accepted and v.timed for v in verdicts)
    assert all(v.stage == Stage.DONE for v in verdicts)
    assert all(math.isfinite(v.cases[0].timing.candidate_graph.median_us) for v in verdicts)


@pytest.mark.parametrize("compile_baselines", [False, True])
def test_correct_candidates_pass_in_fresh_evaluators_with_and_without_compile(
    problem, candidate, compile_baselines
):
    # Once rejected as `module-patching` without compile baselines: torch._dynamo, imported
    # lazily during the run, rebinds torch attributes. The judge no longer fingerprints torch
    # (no candidate code runs there), so what trusted code imports cannot be blamed on one.
    options = EvalOptions(device="cuda", timing_budget_s=0.2, compile_baselines=compile_baselines)
    for problem_name, candidate_name in [("quick_gelu", "quick_gelu"), ("rope", "rope")]:
        with Evaluator(options) as fresh:
            verdict = fresh.evaluate(problem(problem_name), candidate(candidate_name))
        assert verdict.accepted, [str(r) for r in verdict.reasons]
        assert verdict.timed
