import random

from kbot.evaluate.verdict import Stage, Verdict
from kbot.search.archive import Archive, Entry, block_class, cell_of
from kbot.search.fitness import Fitness, simplicity
from kbot.search.islands import Islands
from kbot.search.selection import select_parents


def _entry(sha, speedup=None, proposer="codegen", schedule="pointwise", block=1024, accepted=True,
           noise=0.0, lines=20):  # fmt: skip
    fitness = Fitness(accepted, speedup is not None, speedup, "torch.compile" if speedup else None,
                      None, noise, 1, lines)  # fmt: skip
    verdict = Verdict(accepted, Stage.DONE if accepted else Stage.STATIC, (), "cpu")
    return Entry(sha, f"# {sha}", proposer, (), {"schedule": schedule, "BLOCK": block}, 0, 0,
                 verdict, fitness)  # fmt: skip


def test_block_classes_bucket_the_largest_block_size():
    assert block_class({}) == "none"
    assert block_class({"BLOCK_M": 64, "BLOCK_N": 128}) == "<=128"
    assert block_class({"tunables": {"_k.BLOCK_SIZE": 4096}}) == "<=8k"
    assert block_class({"BLOCK": 65536}) == ">8k"
    assert str(cell_of(_entry("a", block=512))) == "pointwise/<=1k/codegen"


def test_grid_keeps_the_best_of_each_cell_and_elites_stay_bounded():
    archive = Archive(elite_size=3)
    archive.add(_entry("a", 1.1))
    archive.add(_entry("b", 1.3))  # same cell as a, better
    archive.add(_entry("c", 0.9, schedule="looped"))
    archive.add(_entry("d", 1.0, proposer="tune"))
    archive.add(_entry("e", 2.0, accepted=False))
    assert {str(c): e.sha256 for c, e in archive.cells.items()} == {
        "pointwise/<=1k/codegen": "b",
        "looped/<=1k/codegen": "c",
        "pointwise/<=1k/tune": "d",
    }
    assert [e.sha256 for e in archive.elites()] == ["b", "a", "d"]
    assert archive.best.sha256 == "b"


def test_improvement_must_clear_the_noise_floor():
    archive = Archive()
    assert archive.add(_entry("a", 1.00, noise=0.05))
    assert not archive.add(_entry("b", 1.04, noise=0.05))  # inside the spread: no gain
    assert archive.best.sha256 == "b"  # but it still leads
    assert archive.add(_entry("c", 1.20, noise=0.05))


def test_on_cpu_the_simplest_accepted_candidate_leads():
    archive = Archive()
    archive.add(_entry("long", lines=40))
    assert archive.add(_entry("short", lines=25))
    assert archive.best.sha256 == "short"
    two_kernels = "@triton.jit\ndef _a(): pass\n\n@triton.jit\ndef _b(): pass\n"
    assert simplicity(two_kernels) == (2, 4)
    helper_and_kernel = (
        "@triton.jit\ndef _round(x): return x\n\n@triton.jit\ndef _k(p): _round(p)\n\n"
        "def launch(p):\n    _k[(1,)](p)\n"
    )
    assert simplicity(helper_and_kernel)[0] == 1  # the helper is not a launch


def test_islands_are_bounded_and_migrate_their_best_around_a_ring():
    islands = Islands(3, capacity=2)
    for i, speed in enumerate((1.0, 1.5, 1.2)):
        islands.add(0, _entry(f"x{i}", speed))
    islands.add(1, _entry("y", 1.1))
    islands.add(2, _entry("rejected", 5.0, accepted=False))
    assert [e.sha256 for e in islands.members(0)] == ["x1", "x2"]
    assert islands.members(2) == []
    moves = islands.migrate()
    assert (0, 1, "x1") in moves and (1, 2, "y") in moves
    assert [e.sha256 for e in islands.members(1)] == ["x1", "y"]


def test_selection_mixes_exploitation_and_exploration_deterministically():
    archive = Archive()
    members = [_entry(f"m{i}", 1.0 + i / 10) for i in range(5)]
    for entry in members:
        archive.add(entry)
    archive.add(_entry("explore", 0.5, schedule="looped"))
    picks = [select_parents(members, archive, [], random.Random(s), 0.7) for s in range(40)]
    assert picks == [select_parents(members, archive, [], random.Random(s), 0.7) for s in range(40)]
    chosen = {p.sha256 for pair in picks for p in pair}
    assert "explore" in chosen and "m4" in chosen
    assert all(len({p.sha256 for p in pair}) == len(pair) for pair in picks)


def test_without_accepted_candidates_parents_are_the_latest_rejected():
    rejected = [_entry(f"r{i}", accepted=False) for i in range(3)]
    parents = select_parents([], Archive(), rejected, random.Random(0), 0.7)
    assert [p.sha256 for p in parents] == ["r1", "r2"]
