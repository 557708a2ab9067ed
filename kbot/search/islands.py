"""Islands: separate small populations that evolve apart and exchange their best every few
generations (ring migration), which slows the collapse onto one design."""

from __future__ import annotations

from kbot.search.archive import Entry


class Islands:
    def __init__(self, count: int, capacity: int = 8) -> None:
        self.count = count
        self.capacity = capacity
        self._members: list[list[Entry]] = [[] for _ in range(count)]

    def add(self, island: int, entry: Entry) -> None:
        """Accepted entries join their island; the weakest leave when it is full."""
        if not entry.fitness.accepted:
            return
        members = self._members[island % self.count]
        if any(m.sha256 == entry.sha256 for m in members):
            return
        members.append(entry)
        members.sort(key=lambda e: e.fitness.sort_key(), reverse=True)
        del members[self.capacity :]

    def members(self, island: int) -> list[Entry]:
        return list(self._members[island % self.count])

    def migrate(self) -> list[tuple[int, int, str]]:
        """Copies each island's best to the next island; returns (from, to, sha256) moves."""
        if self.count < 2:
            return []
        bests = [members[0] if members else None for members in self._members]
        moves = []
        for source, best in enumerate(bests):
            if best is None:
                continue
            target = (source + 1) % self.count
            if all(m.sha256 != best.sha256 for m in self._members[target]):
                self.add(target, best)
                moves.append((source, target, best.sha256))
        return moves
