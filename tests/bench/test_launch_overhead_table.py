"""bench/launch_overhead.py's table: one cell per column in both layouts, and an op the
evaluator did not time reads "nan", never a number (the measurement itself needs a GPU)."""

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "bench" / "launch_overhead.py"


def _script():
    spec = importlib.util.spec_from_file_location("launch_overhead", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_row_has_a_cell_per_column_with_and_without_the_evaluator_columns():
    lo = _script()
    timed = {name: lo.Timing(1.5, 22.8, 24.0) for name in lo.IMPLEMENTATIONS}
    row = lo.Row("rmsnorm", {"T": 1}, lambda: None, timed)
    row.evaluator_plain["sandboxed"] = (59.4, 30.1)
    for through in (False, True):
        header, rule, line = lo.table([row], through)
        assert header.count("|") == rule.count("|") == line.count("|")
    assert line.endswith("| 59.4 / 30.1 | nan / nan |")
