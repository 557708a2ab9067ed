import ast
from pathlib import Path

import pytest

from kbot.errors import UsageError
from kbot.propose.base import Parent, ProposeContext, source_hash
from kbot.propose.registry import PROPOSERS, make_proposers
from kbot.propose.tune import TuneProposer, find_tunables, neighbours


def _context(parents, seed=0, max_proposals=8):
    from kbot.problem.spec import parse_problem

    problem = parse_problem(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
        "def get_inputs():\n    return [torch.randn(1000)]\ndef get_init_inputs():\n    return []\n",
        Path("p.py"),
    )
    return ProposeContext(problem, tuple(parents), "cpu", seed, max_proposals)


def test_finds_every_kind_of_tunable_with_its_value(parent):
    found = {t.name: (t.kind, t.value) for t in find_tunables(parent.source)}
    assert found == {
        "BLOCK_SIZE": ("block", 1024),
        "ROWS_PER_PROGRAM": ("rows", 2),
        "eviction_policy": ("eviction", "evict_first"),
        "_scale_kernel.LOOP": ("flag", False),
        "_scale_kernel.num_warps": ("warps", 4),
        "_scale_kernel.num_stages": ("stages", 2),
    }


def test_neighbours_stay_powers_of_two_and_in_range(parent):
    by_name = {t.name: t for t in find_tunables(parent.source)}
    assert neighbours(by_name["BLOCK_SIZE"]) == [256, 512, 2048, 4096]
    assert neighbours(by_name["_scale_kernel.num_warps"]) == [1, 2, 8, 16]
    assert neighbours(by_name["_scale_kernel.LOOP"]) == [True]
    assert set(neighbours(by_name["eviction_policy"])) == {"", "evict_last"}


def test_mutations_are_valid_distinct_python_that_keeps_comments(parent):
    outcome = TuneProposer().propose(_context([parent], max_proposals=8))
    assert len(outcome.proposals) == 8
    hashes = {p.source_sha256 for p in outcome.proposals}
    assert len(hashes) == 8 and parent.source_sha256 not in hashes
    for proposal in outcome.proposals:
        ast.parse(proposal.source)
        assert "measured: faster than 512 + loop" in proposal.source  # comments survive
        assert proposal.parent_sha256 == (parent.source_sha256,)
        tunables = proposal.params["tunables"]
        for name, (old, new) in proposal.params["mutated"].items():
            assert tunables[name] == new != old
        current = {t.name: t.value for t in find_tunables(proposal.source)}
        assert current == tunables  # params record what the source says
        if "BLOCK_SIZE" in proposal.params["mutated"]:
            assert tunables["BLOCK_SIZE"] & (tunables["BLOCK_SIZE"] - 1) == 0


def test_same_seed_same_proposals_other_seed_other_proposals(parent):
    a = TuneProposer().propose(_context([parent], seed=1)).proposals
    b = TuneProposer().propose(_context([parent], seed=1)).proposals
    c = TuneProposer().propose(_context([parent], seed=2)).proposals
    assert [p.source for p in a] == [p.source for p in b] != [p.source for p in c]


def test_nothing_to_tune_is_a_skipped_reason_not_an_error():
    assert "needs a parent" in TuneProposer().propose(_context([])).skipped_reason
    plain = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"
    bare = Parent(plain, source_hash(plain), "llm", True, None)
    outcome = TuneProposer().propose(_context([bare]))
    assert outcome.proposals == () and "no launch or constexpr" in outcome.skipped_reason


def test_a_tuned_kernel_still_computes_the_same(parent, tmp_path, device):
    import importlib.util

    import torch

    x = torch.randn(1000, device=device)
    proposals = TuneProposer().propose(_context([parent], max_proposals=3)).proposals
    assert len(proposals) == 3
    for proposal in proposals:
        path = tmp_path / f"{proposal.source_sha256[:8]}.py"
        path.write_text(proposal.source)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        torch.testing.assert_close(module.ModelNew()(x), x * 2)


def test_registry_fails_on_unknown_names_listing_valid_ones():
    with pytest.raises(UsageError, match=r"'magic'.*valid proposers: .*tune"):
        make_proposers(["tune", "magic"])
    assert [p.name for p in make_proposers(["tune", "tune"])] == ["tune"]
    assert "llm" in PROPOSERS


def test_registry_builds_codegen_lazily():
    assert make_proposers(["codegen"])[0].name == "codegen"


def test_problem_sizes_in_lower_case_are_never_tuned():
    source = "NUM_WARPS = 4\nBLOCK_N = 256\n\ndef launch(x):\n    n_rows = 1\n    rows_seen = 2\n    return n_rows\n"
    assert {t.name: t.kind for t in find_tunables(source)} == {
        "NUM_WARPS": "warps",
        "BLOCK_N": "block",
    }
