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
