"""Child process for test_budget_wall.py: `kbot optimize --json` with a fake proposer and a
slow fake evaluator, to be stopped with SIGTERM mid-run.

usage: python sigterm_child.py PROBLEM WORK_DIR
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    spec = importlib.util.spec_from_file_location("kbot_search_test_fakes", HERE / "fakes.py")
    fakes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fakes)
    import kbot.propose.registry as registry
    import kbot.search.runner as runner
    from kbot.cli import main as kbot_main

    # the config schema knows the real names only, so the fake stands in for `tune`
    registry.PROPOSERS["tune"] = lambda: fakes.FakeProposer(name="tune")
    runner.default_evaluator = lambda *a: fakes.FakeEvaluator(sleep_s=0.4)
    problem, work_dir = sys.argv[1], sys.argv[2]
    return kbot_main(["optimize", problem, "--proposers", "tune", "--device", "cpu",
                      "--generations", "4", "--time-budget", "600", "--work-dir", work_dir,
                      "--json"])  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
