"""Child process for test_resume_sigkill.py: an optimize run slow enough to be killed mid-run.

usage: python sigkill_child.py WORK_DIR PROBLEM LOG [RUN_ID]
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    spec = importlib.util.spec_from_file_location("kbot_search_test_fakes", HERE / "fakes.py")
    fakes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fakes)
    from kbot.problem import load_problem
    from kbot.search import Budget, OptimizeOptions, optimize

    work_dir, problem_path, log = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    resume = sys.argv[4] if len(sys.argv) > 4 else None
    evaluator = fakes.FakeEvaluator(sleep_s=0.1, log_path=log)
    result = optimize(
        load_problem(problem_path),
        OptimizeOptions(device="cpu", budget=Budget(generations=2, time_s=None)),
        work_dir,
        resume_run_id=resume,
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [fakes.FakeProposer()],
    )
    print(result.run_id, result.candidates, result.fresh_evaluations)


if __name__ == "__main__":
    main()
