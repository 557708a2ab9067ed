"""The pool behind `--gpus`: jobs spread over several workers, verdicts identical in form to a
single worker's. On a CPU the pool is two CPU workers (one per GPU on a GPU machine)."""

import queue
import threading

from kbot.evaluate import EvalOptions, Evaluator
from kbot.evaluate.sandbox import WorkerProcess


def two_worker_pool() -> Evaluator:
    evaluator = Evaluator(EvalOptions(device="cpu", timeout_s=120.0))
    evaluator._workers = [WorkerProcess("cpu", None), WorkerProcess("cpu", None)]
    evaluator._idle = queue.Queue()
    for worker in evaluator._workers:
        evaluator._idle.put(worker)
    return evaluator


def test_pool_spreads_jobs_and_verdicts_keep_their_form(evaluator, problem, candidate):
    single = evaluator.evaluate(problem("quick_gelu"), candidate("quick_gelu"))
    with two_worker_pool() as pool:
        used: set[int] = set()
        original = pool._run

        def recording_run(worker, spec, jobs, *rest):
            used.add(id(worker))
            threading.Event().wait(0.5)  # hold the worker so the other one takes a job
            return original(worker, spec, jobs, *rest)

        pool._run = recording_run
        sources = [candidate("quick_gelu"), candidate("cheat_all_zeros"), candidate("quick_gelu")]
        verdicts = pool.evaluate_many(problem("quick_gelu"), sources)
        assert pool.workers_spawned == 2 and len(used) == 2
    assert [v.accepted for v in verdicts] == [True, False, True]
    assert set(verdicts[0].to_json()) == set(single.to_json())
    assert verdicts[0].stage == single.stage


def test_prepare_starts_every_worker_before_any_candidate(problem, candidate):
    """`prepare` pays the one-time costs (workers, the reference; baselines on a GPU) with no
    candidate; the evaluations after it reuse the started workers."""
    with two_worker_pool() as pool:
        assert pool.prepare(problem("quick_gelu")) is None
        assert pool.workers_spawned == 2
        # each judge says where it runs: a CPU worker sees no GPU
        assert [w.info.placement for w in pool._workers] == [{"visible_devices": ""}] * 2
        assert all(w.pid is not None for w in pool._workers)
        verdict = pool.evaluate(problem("quick_gelu"), candidate("quick_gelu"))
        assert verdict.accepted and pool.workers_spawned == 2


def test_prepare_reports_a_reference_that_fails(tmp_path, evaluator):
    from kbot.problem import load_problem

    path = tmp_path / "broken.py"
    path.write_text(
        "import torch\n\n\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        raise ValueError('this reference is broken')\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\n\n\n"
        "def get_init_inputs():\n    return []\n",
        encoding="utf-8",
    )
    failure = evaluator.prepare(load_problem(path))
    assert failure is not None and "this reference is broken" in failure
