"""Problem files: KernelBench's format plus kbot's optional `CASES` and `KBOT` options.

`load_problem` reads a file without running it (AST only); `kbot.problem.runtime` imports it,
which only the evaluator's worker and the codegen tracer do.
"""

from kbot.problem.spec import ProblemOptions, ProblemSpec, load_problem

__all__ = ["ProblemOptions", "ProblemSpec", "load_problem"]
