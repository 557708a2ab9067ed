"""The search: islands, an archive of elites and a MAP-Elites grid, budgets, a SQLite store.

`optimize()` runs one problem end to end and writes `<work-dir>/runs/<run_id>/`
(docs/architecture.md). Importing this package does not import torch.
"""

from kbot.search.budget import StopReason
from kbot.search.options import Budget, OptimizeOptions, parse_duration_s
from kbot.search.runner import OptimizeResult, OptimizeStatus, load_run_options, optimize

__all__ = [
    "Budget",
    "OptimizeOptions",
    "OptimizeResult",
    "OptimizeStatus",
    "StopReason",
    "load_run_options",
    "optimize",
    "parse_duration_s",
]
