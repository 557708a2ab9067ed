"""Before a search starts: the problem file's own code runs once (its import, `get_init_inputs`,
`Model(...)` and `get_inputs` of every case), so a problem that cannot build its inputs is said
in one line with exit 2, as `kbot eval` says it, instead of being met by the evaluator after
the run has started (which then ends as "no candidate was proposed", exit 1)."""

from __future__ import annotations

import functools
from typing import Any

from kbot.errors import ProblemError
from kbot.problem import ProblemSpec


def check_problem_builds(problem: ProblemSpec) -> None:
    """Raises ProblemError naming the file, the call and its exception. Built on the meta
    device (no memory, no compute); what cannot run there (it reads values: numpy, `.item()`)
    is built again on the CPU, and only that failure counts."""
    from kbot.evaluate.processes import short
    from kbot.problem.runtime import build_on, case_inputs, import_file, init_inputs

    steps = ["importing it"]  # the last one names the call that raised

    def model() -> Any:  # one step, so the CPU build of a Model gets CPU init inputs too
        steps.append("get_init_inputs()")
        init = init_inputs(module)
        steps.append("Model(*get_init_inputs())")
        return module.Model(*init)

    try:
        module = import_file(problem.path, prefix="kbot_problem_check")
        build_on("meta", model)
        for case in problem.cases or ({},):
            steps.append(f"get_inputs({_arguments(case)})")
            build_on("meta", functools.partial(case_inputs, module, dict(case)))
    except (Exception, SystemExit) as exc:  # the user's code: its failure is bad input
        raise ProblemError(
            f"problem {problem.path}: {steps[-1]} raised {short(exc)}; fix the problem file"
        ) from None


def _arguments(case: dict[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in case.items())
