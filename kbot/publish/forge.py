"""The publisher's seam to a code host: the few pull-request operations kbot needs.

`kbot.publish.github.GitHubForge` implements it with PyGithub; tests drive that real client
against a local HTTP server, and the lifecycle logic against a fake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str
    head_branch: str
    head_owner: str  # owner of the repository the head branch lives in (differs for forks)
    title: str
    body: str
    labels: tuple[str, ...]
    draft: bool


@dataclass(frozen=True)
class CommitAuthor:
    sha: str
    name: str
    email: str


class Forge(Protocol):
    full_name: str  # "owner/name" of the repository PRs are opened against

    def open_pulls(self) -> list[PullRequest]: ...

    def pull_commit_authors(self, number: int) -> list[CommitAuthor]: ...

    def create_pull(
        self, title: str, body: str, head: str, base: str, draft: bool
    ) -> PullRequest: ...

    def update_pull(self, number: int, title: str, body: str) -> PullRequest: ...

    def add_labels(self, number: int, labels: tuple[str, ...]) -> None: ...

    def close_pull(self, number: int, comment: str) -> None: ...
