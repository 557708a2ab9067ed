"""Parent selection: mostly exploit (tournament among the island's best), sometimes explore
(a random MAP-Elites cell), so the search neither stalls on one design nor wanders."""

from __future__ import annotations

import random

from kbot.search.archive import Archive, Entry


def select_parents(
    island_members: list[Entry],
    archive: Archive,
    rejected: list[Entry],
    rng: random.Random,
    exploit_probability: float,
    count: int = 2,
) -> tuple[Entry, ...]:
    """Up to `count` distinct parents. With nothing accepted yet, the latest rejected entries
    are offered instead, so feedback-driven proposers can repair them."""
    pool_exploit = island_members or archive.elites()
    pool_explore = archive.cell_entries()
    if not pool_exploit and not pool_explore:
        return tuple(rejected[-count:])
    chosen: list[Entry] = []
    for _ in range(count * 3):
        if len(chosen) >= count:
            break
        if pool_exploit and (rng.random() < exploit_probability or not pool_explore):
            pick = _tournament(pool_exploit, rng)
        else:
            pick = rng.choice(pool_explore)
        if all(c.sha256 != pick.sha256 for c in chosen):
            chosen.append(pick)
    return tuple(chosen)


def _tournament(pool: list[Entry], rng: random.Random, size: int = 3) -> Entry:
    contestants = [rng.choice(pool) for _ in range(min(size, len(pool)))]
    return max(contestants, key=lambda e: e.fitness.sort_key())
