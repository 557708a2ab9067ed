"""Publishing one run directory: plan the files, commit them on `kbot/<op>` in kbot's clone,
write the drafts to the work directory, and, when pushing, hand the PR to the lifecycle.

Drafts (`<work_dir>/publish/<op>/`): `pr_title.txt`, `pr_body.md`, `pr.json` (what would be
sent: head, base, labels, draft, files, marker) and `changes.patch` (`git am`-able).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from kbot.errors import ToolError
from kbot.evaluate.credentials import secret_values
from kbot.output import to_jsonable
from kbot.publish.artifacts import render_publication
from kbot.publish.forge import Forge
from kbot.publish.github import GitHubForge, missing_token_message
from kbot.publish.gitops import Workspace, github_repo_of, locate_repo, remote_url_for
from kbot.publish.lifecycle import Action, Lifecycle, LifecyclePolicy, RunState
from kbot.publish.plan import plan_publication
from kbot.publish.redact import redact
from kbot.publish.repo_style import style_section
from kbot.publish.rundir import load_run_dir


@dataclass(frozen=True)
class PublishSettings:
    """The `publish:` section of `.kbot.yml` (see docs/config.md)."""

    repo: str | None = None
    base_branch: str = "main"
    branch_prefix: str = "kbot/"
    labels: tuple[str, ...] = ("kbot", "performance")
    draft: bool = True
    max_open_prs: int = 5
    max_prs_per_run: int = 3
    signoff: bool = False
    github_base_url: str = "https://api.github.com"
    token_env: str = "GITHUB_TOKEN"
    fork: str | None = None

    @classmethod
    def from_config(cls, publish: object, fork: str | None = None) -> PublishSettings:
        """From `kbot.config.Config.publish` (duck-typed); `fork` from the command line wins."""
        names = cls.__dataclass_fields__
        values = {name: getattr(publish, name) for name in names}
        values["labels"] = tuple(values["labels"])
        if fork:
            values["fork"] = fork
        return cls(**values)


@dataclass(frozen=True)
class PublishOutcome:
    op: str
    target: str  # "file.py::Qualname"
    adapter: str
    action: Action
    message: str
    branch: str
    commit_sha: str
    base_sha: str
    drafts_dir: Path
    clone_dir: Path
    files: tuple[str, ...]
    pr_number: int | None = None
    pr_url: str | None = None
    superseded: tuple[int, ...] = ()


ForgeFactory = Callable[[str, str | None, PublishSettings], Forge]


def github_forge(full_name: str, token: str | None, settings: PublishSettings) -> Forge:
    return GitHubForge(full_name, token, settings.token_env, settings.github_base_url)


def should_push(
    dry_run: bool, push: bool, settings: PublishSettings, environ: Mapping[str, str]
) -> bool:
    """Dry run unless --push, or running in CI (CI / GITHUB_ACTIONS = true) with a token."""
    if dry_run:
        return False
    if push:
        return True
    in_ci = any(environ.get(k, "").lower() == "true" for k in ("CI", "GITHUB_ACTIONS"))
    return in_ci and bool(environ.get(settings.token_env))


def publish_run(
    run_dir: Path,
    repo_path: Path,
    work_dir: Path,
    settings: PublishSettings,
    push: bool,
    adapter: str = "auto",
    forge_factory: ForgeFactory = github_forge,
    state: RunState | None = None,
    environ: Mapping[str, str] | None = None,
) -> PublishOutcome:
    environ = os.environ if environ is None else environ
    token = environ.get(settings.token_env) or None
    run = load_run_dir(run_dir)
    repo = locate_repo(repo_path)
    secrets = [token, *secret_values(environ), *repo.remote_secrets]
    full_name = settings.repo or github_repo_of(repo.origin_url)
    forge = None
    if push:
        # Checked before any work, so a missing token costs nothing.
        if full_name is None:
            raise ToolError(
                "cannot tell which GitHub repository to open the PR on: set publish.repo "
                "(owner/name) in .kbot.yml or add an `origin` remote"
            )
        if not token:
            raise ToolError(missing_token_message(settings.token_env, full_name))
        forge = forge_factory(full_name, token, settings)
    workspace = Workspace(repo, work_dir)
    _, base_sha = workspace.checkout_base(settings.base_branch)
    plan = plan_publication(
        run, workspace.path, repo.scanned_prefix, base_sha, settings.labels, adapter
    )
    publication = render_publication(plan)
    branch = f"{settings.branch_prefix}{publication.op}"
    result = workspace.commit(
        branch, publication.files, redact(publication.commit_message, secrets), settings.signoff
    )
    if result.style:
        publication = replace(publication, body=publication.body + style_section(result.style))
    target = f"{repo.scanned_prefix}{run.target.file}::{run.target.qualname}" if run.target else ""
    drafts = work_dir / "publish" / publication.op
    head_owner = (settings.fork or full_name or "/").split("/")[0]
    head = f"{head_owner}:{branch}" if settings.fork else branch
    _write_drafts(
        drafts,
        secrets,
        title=publication.title,
        body=publication.body,
        patch=result.patch,
        record={
            "repo": full_name,
            "head": head,
            "base": settings.base_branch,
            "title": publication.title,
            "labels": list(publication.labels),
            "draft": settings.draft,
            "branch": branch,
            "commit": result.commit_sha,
            "base_sha": base_sha,
            "adapter": publication.adapter,
            "files": [{"path": f.path, "created": f.created} for f in publication.files],
            "marker": publication.marker.to_json(),
        },
    )
    outcome = dict(
        op=publication.op,
        target=target,
        adapter=publication.adapter,
        branch=branch,
        commit_sha=result.commit_sha,
        base_sha=base_sha,
        drafts_dir=drafts,
        clone_dir=workspace.path,
        files=tuple(f.path for f in publication.files),
    )
    if forge is None:
        return PublishOutcome(
            action=Action.DRY_RUN,
            message=f"dry run: branch {branch} in {workspace.path}, drafts in {drafts}",
            **outcome,
        )
    assert full_name is not None
    push_url = remote_url_for(repo, settings.fork or full_name, settings.github_base_url)
    policy = LifecyclePolicy(
        base_branch=settings.base_branch,
        draft=settings.draft,
        max_open_prs=settings.max_open_prs,
        max_prs_per_run=settings.max_prs_per_run,
        head_owner=head_owner,
        fork=settings.fork is not None,
    )
    try:
        decision = Lifecycle(forge, policy, state).publish(
            branch,
            redact(publication.title, secrets),
            redact(publication.body, secrets),
            publication.labels,
            publication.marker,
            push=lambda: workspace.push(branch, push_url, token),
        )
    except ToolError as exc:
        raise ToolError(redact(str(exc), secrets)) from None
    return PublishOutcome(
        action=decision.action,
        message=redact(decision.message, secrets),
        pr_number=decision.pull.number if decision.pull else None,
        pr_url=decision.pull.url if decision.pull else None,
        superseded=decision.superseded,
        **outcome,
    )


def _write_drafts(
    drafts: Path, secrets: list[str | None], title: str, body: str, patch: str, record: dict
) -> None:
    drafts.mkdir(parents=True, exist_ok=True)
    (drafts / "pr_title.txt").write_text(redact(title, secrets) + "\n", encoding="utf-8")
    (drafts / "pr_body.md").write_text(redact(body, secrets), encoding="utf-8")
    (drafts / "changes.patch").write_text(redact(patch, secrets), encoding="utf-8")
    text = json.dumps(to_jsonable(record), indent=2) + "\n"
    (drafts / "pr.json").write_text(redact(text, secrets), encoding="utf-8")
