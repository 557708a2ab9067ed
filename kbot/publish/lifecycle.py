"""The life of a kbot PR, the way the best dependency bots run theirs.

- one fixed branch per op (`kbot/<op>`), found again by branch and by the hidden marker;
- an open PR is updated in place (force-push + new body) when the kernel or the base changed,
  and left as it is when neither did;
- a PR someone else pushed to is never touched again (the summary says so);
- other open kbot PRs for the same op (an older branch name, say) are closed with a comment
  pointing at the new one;
- no new PR beyond `max_open_prs` open kbot PRs, nor beyond `max_prs_per_run` in one run.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from kbot.publish.forge import Forge, PullRequest
from kbot.publish.gitops import KBOT_EMAIL
from kbot.publish.marker import Marker, find_marker


class Action(str, enum.Enum):
    DRY_RUN = "dry_run"  # everything written to the work directory, nothing sent
    CREATED = "created"
    UPDATED = "updated"
    UP_TO_DATE = "up_to_date"  # same kernel, same base: nothing pushed
    HUMAN_EDITED = "human_edited"  # someone else pushed to the branch: left alone
    LIMITED = "limited"  # max_open_prs or max_prs_per_run reached


@dataclass(frozen=True)
class LifecyclePolicy:
    base_branch: str
    draft: bool
    max_open_prs: int
    max_prs_per_run: int
    head_owner: str  # owner of the repository the branch is pushed to (the fork's, if any)
    fork: bool


@dataclass(frozen=True)
class Decision:
    action: Action
    message: str
    pull: PullRequest | None = None
    superseded: tuple[int, ...] = ()


@dataclass
class RunState:
    """What one `kbot run` has done so far, shared by the ops it publishes."""

    created: int = 0
    open_pulls: list[PullRequest] | None = None
    closed: set[int] = field(default_factory=set)


class Lifecycle:
    def __init__(self, forge: Forge, policy: LifecyclePolicy, state: RunState | None = None):
        self.forge = forge
        self.policy = policy
        self.state = state or RunState()

    def _open_kbot_pulls(self) -> list[PullRequest]:
        if self.state.open_pulls is None:
            self.state.open_pulls = self.forge.open_pulls()
        return [
            p
            for p in self.state.open_pulls
            if find_marker(p.body) is not None and p.number not in self.state.closed
        ]

    def publish(
        self,
        branch: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
        marker: Marker,
        push: Callable[[], None],
    ) -> Decision:
        """Pushes (only when needed) and opens, updates or leaves the PR for one op."""
        kbot_pulls = self._open_kbot_pulls()
        ours = [
            p
            for p in kbot_pulls
            if p.head_branch == branch
            and (p.head_owner == self.policy.head_owner or not p.head_owner)
        ]
        same_op = [
            p
            for p in kbot_pulls
            if p not in ours and (find_marker(p.body) or marker).op == marker.op
        ]
        if ours:
            decision = self._update(ours[0], title, body, labels, marker, push)
        else:
            decision = self._create(
                branch, title, body, labels, push, len(kbot_pulls) - len(same_op)
            )
        if decision.pull is not None and decision.action in (Action.CREATED, Action.UPDATED):
            closed = self._supersede(same_op, decision.pull)
            decision = Decision(decision.action, decision.message, decision.pull, closed)
        return decision

    def _update(
        self,
        pull: PullRequest,
        title: str,
        body: str,
        labels: tuple[str, ...],
        marker: Marker,
        push: Callable[[], None],
    ) -> Decision:
        others = [a for a in self.forge.pull_commit_authors(pull.number) if a.email != KBOT_EMAIL]
        if others:
            who = ", ".join(sorted({f"{a.name} <{a.email}>" for a in others}))
            return Decision(
                Action.HUMAN_EDITED,
                f"#{pull.number} has commits by {who}; kbot leaves it alone (close it to let "
                "kbot open a fresh one)",
                pull,
            )
        old = find_marker(pull.body)
        if old is not None and (old.kernel_sha256, old.base_sha) == (
            marker.kernel_sha256,
            marker.base_sha,
        ):
            return Decision(
                Action.UP_TO_DATE, f"#{pull.number} already carries this kernel on this base", pull
            )
        push()
        updated = self.forge.update_pull(pull.number, title, body)
        missing = tuple(label for label in labels if label not in updated.labels)
        self.forge.add_labels(pull.number, missing)
        return Decision(Action.UPDATED, f"updated #{pull.number} in place", updated)

    def _create(
        self,
        branch: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
        push: Callable[[], None],
        open_count: int,
    ) -> Decision:
        policy = self.policy
        if self.state.created >= policy.max_prs_per_run:
            return Decision(
                Action.LIMITED,
                f"not opened: this run already opened {self.state.created} PRs "
                f"(publish.max_prs_per_run = {policy.max_prs_per_run})",
            )
        if open_count >= policy.max_open_prs:
            return Decision(
                Action.LIMITED,
                f"not opened: {open_count} kbot PRs are open "
                f"(publish.max_open_prs = {policy.max_open_prs}); merge or close some",
            )
        push()
        head = f"{policy.head_owner}:{branch}" if policy.fork else branch
        pull = self.forge.create_pull(title, body, head, policy.base_branch, policy.draft)
        self.forge.add_labels(pull.number, labels)
        self.state.created += 1
        if self.state.open_pulls is not None:
            self.state.open_pulls.append(pull)
        return Decision(Action.CREATED, f"opened #{pull.number}", pull)

    def _supersede(self, same_op: list[PullRequest], new: PullRequest) -> tuple[int, ...]:
        closed = []
        for old in same_op:
            if old.number == new.number:
                continue
            if any(a.email != KBOT_EMAIL for a in self.forge.pull_commit_authors(old.number)):
                continue  # a human pushed to it: not ours to close
            self.forge.close_pull(
                old.number,
                f"Superseded by #{new.number}, which carries a newer kernel for the same op. "
                "Closed by kbot.",
            )
            self.state.closed.add(old.number)
            closed.append(old.number)
        return tuple(closed)
