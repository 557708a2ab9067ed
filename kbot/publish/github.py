"""The GitHub side of the publisher, with PyGithub: pull requests, labels, comments.

Every failure becomes one ToolError line saying what to fix (token, scopes, fork, base branch);
5xx answers and secondary rate limits are retried with backoff by PyGithub's GithubRetry.
The token goes only into the client's Authorization header; messages are passed through
`redact` all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.PullRequest import PullRequest as GhPull

from kbot.errors import ToolError
from kbot.evaluate.credentials import secret_values
from kbot.publish.forge import CommitAuthor, PullRequest
from kbot.publish.redact import redact

T = TypeVar("T")


def missing_token_message(token_env: str, full_name: str) -> str:
    return (
        f"no GitHub token: set ${token_env} to a token that may push to and open pull requests "
        f"on {full_name} (fine-grained: contents and pull requests read/write; classic: `repo`), "
        "or run with --dry-run"
    )


class GitHubForge:
    def __init__(
        self,
        full_name: str,
        token: str | None,
        token_env: str = "GITHUB_TOKEN",
        base_url: str = "https://api.github.com",
        retries: int = 5,
        backoff_s: float = 1.0,
        secondary_rate_wait_s: float = 60.0,
        seconds_between_writes: float | None = 1.0,
        timeout_s: int = 30,
    ) -> None:
        if not token:
            raise ToolError(missing_token_message(token_env, full_name))
        self.full_name = full_name
        self._token = token
        self._token_env = token_env
        self._secrets = [token, *secret_values()]
        retry = GithubRetry(
            total=retries,
            backoff_factor=backoff_s,
            secondary_rate_wait=secondary_rate_wait_s,
            allowed_methods=None,  # POST/PATCH too: a 502 on create is retried, not fatal
        )
        self._github = Github(
            base_url=base_url.rstrip("/"),
            auth=Auth.Token(token),
            retry=retry,
            timeout=timeout_s,
            seconds_between_requests=None,
            seconds_between_writes=seconds_between_writes,
        )
        self._repo = None

    # -- the Forge protocol ------------------------------------------------------------------

    def open_pulls(self) -> list[PullRequest]:
        return self._call(
            "listing open pull requests",
            lambda: [_record(p) for p in self._repository().get_pulls(state="open")],
        )

    def pull_commit_authors(self, number: int) -> list[CommitAuthor]:
        def authors() -> list[CommitAuthor]:
            commits = self._repository().get_pull(number).get_commits()
            return [
                CommitAuthor(c.sha, c.commit.author.name or "", c.commit.author.email or "")
                for c in commits
            ]

        return self._call(f"reading the commits of #{number}", authors)

    def create_pull(self, title: str, body: str, head: str, base: str, draft: bool) -> PullRequest:
        return self._call(
            f"opening a pull request from {head} into {base}",
            lambda: _record(
                self._repository().create_pull(
                    title=title, body=body, head=head, base=base, draft=draft
                )
            ),
            base=base,
        )

    def update_pull(self, number: int, title: str, body: str) -> PullRequest:
        def update() -> PullRequest:
            pull = self._repository().get_pull(number)
            pull.edit(title=title, body=body)
            return _record(pull)

        return self._call(f"updating #{number}", update)

    def add_labels(self, number: int, labels: tuple[str, ...]) -> None:
        if labels:
            self._call(
                f"labelling #{number}",
                lambda: self._repository().get_pull(number).add_to_labels(*labels),
            )

    def close_pull(self, number: int, comment: str) -> None:
        def close() -> None:
            pull = self._repository().get_pull(number)
            pull.create_issue_comment(comment)
            pull.edit(state="closed")

        self._call(f"closing #{number}", close)

    # -- helpers -------------------------------------------------------------------------------

    def _repository(self):
        if self._repo is None:
            self._repo = self._github.get_repo(self.full_name)
        return self._repo

    def _call(self, what: str, action: Callable[[], T], base: str | None = None) -> T:
        try:
            return action()
        except GithubException as exc:
            raise ToolError(redact(self._explain(exc, what, base), self._secrets)) from None
        except requests.exceptions.RetryError:
            raise ToolError(
                f"GitHub kept failing while {what} (server errors or rate limits after retries); "
                "try again later"
            ) from None
        except requests.exceptions.RequestException as exc:
            raise ToolError(
                redact(
                    f"cannot reach GitHub while {what}: {type(exc).__name__}; check "
                    "publish.github_base_url and the network",
                    self._secrets,
                )
            ) from None

    def _explain(self, exc: GithubException, what: str, base: str | None) -> str:
        status = exc.status
        detail = _github_message(exc.data, self._secrets)
        env, repo = self._token_env, self.full_name
        if status == 401:
            return (
                f"GitHub rejected the token in ${env} (401 {detail or 'Bad credentials'}) while "
                f"{what}: it is expired, revoked or mistyped; create a new one"
            )
        if status == 403:
            return (
                f"GitHub refused {what} (403: {detail}): the token in ${env} lacks permission on "
                f"{repo}; it needs contents and pull requests write access (classic: `repo` "
                "scope), or push to a fork with --fork OWNER/REPO; a protected branch or an "
                "organisation's token policy can also refuse it"
            )
        if status == 404:
            return (
                f"GitHub returned 404 while {what}: {repo} does not exist or the token in ${env} "
                "cannot see it; check publish.repo (or the origin remote) and the token's "
                "repository access"
            )
        if status == 422:
            hint = f"that base branch {base!r} exists on {repo}, " if base else ""
            return (
                f"GitHub refused {what} (422: {detail}): check {hint}that the branch was "
                "pushed, and for a fork that --fork names the repository you pushed to"
            )
        return f"GitHub answered {status} while {what}: {detail or 'no message'}"


def _github_message(data: object, secrets: list[str | None]) -> str:
    """GitHub's explanation, secrets masked before it is cut (a cut secret would not match)."""
    if not isinstance(data, dict):
        return redact(str(data or ""), secrets)[:200]
    parts = [str(data.get("message", ""))]
    for error in data.get("errors") or ():
        if isinstance(error, dict):
            parts.append(str(error.get("message") or error.get("code") or ""))
        else:
            parts.append(str(error))
    return redact("; ".join(p for p in parts if p), secrets)[:300]


def _record(pull: GhPull) -> PullRequest:
    head_repo = pull.head.repo
    return PullRequest(
        number=pull.number,
        url=pull.html_url,
        head_branch=pull.head.ref,
        head_owner=head_repo.owner.login if head_repo is not None else "",
        title=pull.title or "",
        body=pull.body or "",
        labels=tuple(label.name for label in pull.labels),
        draft=bool(pull.draft),
    )
