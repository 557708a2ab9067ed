"""Finding problems in a KernelBench checkout: levels, numbers and ranges, the two root forms."""

import pytest

from kbot.bench.kernelbench import find_problems, parse_ids, parse_levels
from kbot.errors import UsageError


def test_ids_and_ranges():
    assert parse_ids("1-3,7, 10") == {1, 2, 3, 7, 10}
    assert parse_ids("all") is None and parse_ids(None) is None
    with pytest.raises(UsageError, match="ranges like"):
        parse_ids("1..3")
    with pytest.raises(UsageError, match="backwards"):
        parse_ids("5-2")
    assert parse_levels("2,1") == (1, 2)
    with pytest.raises(UsageError):
        parse_levels("one")


def test_problems_by_level_then_number_from_the_checkout_or_its_folder(kernelbench_root):
    refs = find_problems(kernelbench_root, (1, 2), None)
    assert [r.key for r in refs] == ["L1/19", "L1/23", "L1/47", "L2/5"]
    assert refs[2].name == "47_Sum_reduction" and refs[2].path.is_file()
    inner = find_problems(kernelbench_root / "KernelBench", (1,), parse_ids("20-50"))
    assert [r.key for r in inner] == ["L1/23", "L1/47"]


def test_a_root_without_levels_says_what_to_pass(tmp_path, kernelbench_root):
    with pytest.raises(UsageError, match="ScalingIntelligence/KernelBench"):
        (tmp_path / "empty").mkdir()
        find_problems(tmp_path / "empty", (1,), None)
    with pytest.raises(UsageError, match="matches --problems"):
        find_problems(kernelbench_root, (1,), parse_ids("90-99"))
