"""The poison the candidate's process lays over freed memory before each call is best effort: its larger
block takes only what this process has cached and the device's memory beyond a quarter of the
card, and a poison allocation that fails leaves the call to run (the judge's own out-of-memory
once rejected every candidate of a 7 GiB problem as `forward-error`); an out-of-memory in the
candidate's call while other processes hold over a quarter of the card is the judge's failure,
an `evaluator-error` that is never cached."""

from __future__ import annotations

import torch

from kbot.evaluate import poison
from kbot.evaluate.poison import poison_bytes
from kbot.evaluate.tail_canaries import judge_generator

GiB = 1 << 30


def test_small_problems_get_the_whole_block():
    assert poison_bytes(64 << 20, free=70 * GiB, total=80 * GiB, cached=0) == 64 << 20


def test_the_block_keeps_a_quarter_of_the_card_free():
    # 7 GiB outputs on an 80 GB card with 30 GiB free and 2 GiB cached: 2 + (30 - 20)
    assert poison_bytes(14 * GiB, free=30 * GiB, total=80 * GiB, cached=2 * GiB) == 12 * GiB


def test_a_full_card_poisons_only_what_is_cached():
    assert poison_bytes(14 * GiB, free=6 * GiB, total=80 * GiB, cached=GiB) == GiB
    assert poison_bytes(14 * GiB, free=6 * GiB, total=80 * GiB, cached=0) == 0


def test_out_of_memory_while_poisoning_is_not_raised(monkeypatch):
    calls = []
    real_empty = torch.empty

    def empty(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 7.00 GiB")
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(poison.torch, "empty", empty)
    rng = judge_generator(torch.device("cpu"))
    poison.poison([1024, 2048, 4096], torch.device("cpu"), rng)
    assert len(calls) == 2  # the first block poisoned, the failing one ends the poisoning


def test_an_oom_on_a_crowded_card_is_the_judges():
    # L1/36 on the H100: 6 GiB free, this process 28.67 GiB, the rest the judge's other processes
    assert poison.crowded(free=6 * GiB, total=79 * GiB, here=29 * GiB)
    # the candidate's own excess: the card is its alone
    assert not poison.crowded(free=1 * GiB, total=79 * GiB, here=76 * GiB)


def test_an_oom_on_the_cpu_is_the_candidates():
    exc = torch.OutOfMemoryError("out of memory")
    assert poison.crowded_out(exc, torch.device("cpu")) is None
    assert poison.crowded_out(RuntimeError("x"), torch.device("cpu")) is None


def test_the_memory_queries_are_bound_before_candidate_code(monkeypatch):
    # a candidate rebinding torch.cuda.mem_get_info to report a crowded card changes nothing
    # the judge reads
    real = poison.mem_get_info
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (0, 1 << 40))
    assert poison.mem_get_info is real and poison.mem_get_info is not torch.cuda.mem_get_info
