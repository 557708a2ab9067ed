"""Sums of integers or booleans (KernelBench's mean cross-entropy divides by the count of
targets it does not ignore; a count of positive entries per row): accumulated in int64, so the
count is exact at any size, by the one-pass and looped schedules (the split and tiled ones keep
fp32 partials and are not offered). Every variant matches eager; an int64 output exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbot.problem import load_problem
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"


@pytest.mark.parametrize(
    ("path", "checks"),
    [
        (PROBLEMS.parent / "problems_kb" / "cross_entropy_mean.py", 2),
        (PROBLEMS / "positive_count_rows.py", 4),
    ],
    ids=lambda p: getattr(p, "stem", p),
)
def test_every_variant_of_an_integer_sum_matches_eager(path, checks, compare):
    candidates = generate(load_problem(path))
    assert candidates
    for candidate in candidates:
        assert candidate.params["loop"] in ("one_pass", "looped"), candidate.note
        assert compare(path, candidate.source) == checks, candidate.note


def test_a_boolean_count_is_summed_in_int64_in_both_loops():
    candidates = generate(load_problem(PROBLEMS / "positive_count_rows.py"))
    loops = {c.params["loop"] for c in candidates}
    assert loops == {"one_pass", "looped"}  # 5000 columns: both are offered
    for candidate in candidates:
        assert ".to(tl.int64), 0)" in candidate.source, candidate.note
    looped = next(c for c in candidates if c.params["loop"] == "looped")
    assert "tl.full([ROWS, BLOCK_N], 0, tl.int64)" in looped.source
