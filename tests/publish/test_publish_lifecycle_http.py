"""The PR lifecycle through the real PyGithub client against a local GitHub API, with real git
pushes to local bare repositories."""

import json
from dataclasses import replace
from pathlib import Path

import git
import pytest

from kbot.errors import ToolError
from kbot.publish.lifecycle import Action, RunState
from kbot.publish.marker import Marker, find_marker
from kbot.publish.publisher import PublishSettings, publish_run

TOKEN = "ghp_FAKEtoken1234567890SECRETvalue"  # the value conftest's server accepts
ENV = {"GITHUB_TOKEN": TOKEN}
DEFAULTS = PublishSettings()


@pytest.fixture
def publish(target_repo, forge_factory, tmp_path):
    def run(run_dir, settings=DEFAULTS, push=True, environ=ENV, state=None):
        return publish_run(
            run_dir,
            target_repo,
            tmp_path / "work",
            settings,
            push=push,
            forge_factory=forge_factory,
            state=state,
            environ=environ,
        )

    return run


def _branch_commits(bare: Path, branch: str) -> list[git.Commit]:
    return list(git.Repo(bare).iter_commits(f"main..{branch}"))


def _bare(tmp_path, owner="octo"):
    return tmp_path / "remote" / owner / "minisrv.git"


def _new_kernel(run_dir: Path) -> None:
    kernel = run_dir / "kernel.py"
    kernel.write_text(kernel.read_text().replace("num_warps=4", "num_warps=8"))


def test_creates_a_draft_pr_with_labels_and_marker_from_one_commit(
    publish, make_run, github, target_repo, tmp_path
):
    before = git.Repo(target_repo)
    head_before, status_before = before.head.commit.hexsha, before.git.status("--porcelain")
    outcome = publish(make_run("custom_op"))
    assert outcome.action == Action.CREATED and outcome.pr_number == 1
    pull = github.pulls[1]
    assert pull["draft"] is True and pull["labels"] == ["kbot", "performance"]
    assert pull["head"] == "kbot/rmsnorm" and pull["base"] == "main"
    marker = find_marker(pull["body"])
    assert marker.op == "rmsnorm" and marker.base_sha == head_before
    commits = _branch_commits(_bare(tmp_path), "kbot/rmsnorm")
    assert len(commits) == 1 and commits[0].author.email == "kbot@users.noreply.github.com"
    assert "Signed-off-by" not in commits[0].message
    # The user's checkout is exactly as it was: same branch, same commit, nothing staged, no kbot branch.
    after = git.Repo(target_repo)
    assert after.active_branch.name == "main" and after.head.commit.hexsha == head_before
    assert after.git.status("--porcelain") == status_before
    assert "kbot/rmsnorm" not in [h.name for h in after.heads]
    # GitHub Enterprise style base URL: every request went to /api/v3 with the token header.
    assert all(auth == f"token {TOKEN}" for _, _, auth in github.requests)


def test_second_run_updates_in_place_and_an_unchanged_run_sends_nothing(
    publish, make_run, github, tmp_path
):
    run_dir = make_run("custom_op")
    publish(run_dir)
    first_hash = find_marker(github.pulls[1]["body"]).kernel_sha256
    unchanged = publish(run_dir)
    assert unchanged.action == Action.UP_TO_DATE and unchanged.pr_number == 1
    _new_kernel(run_dir)
    updated = publish(run_dir)
    assert updated.action == Action.UPDATED and updated.pr_number == 1
    assert len(github.pulls) == 1
    assert "num_warps=8" in git.Repo(_bare(tmp_path)).git.show(
        "kbot/rmsnorm:minisrv/layers/triton_rmsnorm.py"
    )
    assert find_marker(github.pulls[1]["body"]).kernel_sha256 != first_hash
    assert len(_branch_commits(_bare(tmp_path), "kbot/rmsnorm")) == 1


def test_superseded_pr_for_the_same_op_is_closed_with_a_comment(publish, make_run, github):
    old = Marker(op="rmsnorm", kernel_sha256="old", base_sha="old")
    github.add_pull("kbot-v0/rmsnorm", "old kernel", "old body\n" + old.comment())
    other = Marker(op="silu_and_mul", kernel_sha256="x", base_sha="y")
    github.add_pull("kbot/silu_and_mul", "other op", other.comment())
    outcome = publish(make_run("custom_op"))
    assert outcome.action == Action.CREATED and outcome.superseded == (1,)
    assert github.pulls[1]["state"] == "closed" and github.pulls[2]["state"] == "open"
    assert github.comments == [(1, github.comments[0][1])]
    assert f"#{outcome.pr_number}" in github.comments[0][1]


def test_pr_a_human_pushed_to_is_left_alone(publish, make_run, github, target_repo, tmp_path):
    run_dir = make_run("custom_op")
    publish(run_dir)
    body_before = github.pulls[1]["body"]
    # A maintainer pushes a fix-up commit onto kbot's branch.
    human = git.Repo.clone_from(_bare(tmp_path), tmp_path / "human", branch="kbot/rmsnorm")
    with human.config_writer() as config:  # her identity, not the machine's global one
        config.set_value("user", "name", "Ada Maintainer")
        config.set_value("user", "email", "ada@example.com")
    (tmp_path / "human" / "NOTES.md").write_text("reviewed\n")
    human.git.add("NOTES.md")
    human.git.commit("-m", "review notes")
    human.git.push("origin", "kbot/rmsnorm")
    _new_kernel(run_dir)
    outcome = publish(run_dir)
    assert outcome.action == Action.HUMAN_EDITED
    assert "Ada Maintainer" in outcome.message and "leaves it alone" in outcome.message
    assert github.pulls[1]["body"] == body_before
    assert len(_branch_commits(_bare(tmp_path), "kbot/rmsnorm")) == 2  # not force-pushed over


def test_limits_on_open_prs_and_prs_per_run(publish, make_run, github):
    github.add_pull("kbot/other", "other", Marker("other", "a", "b").comment())
    limited = publish(make_run("custom_op"), PublishSettings(max_open_prs=1))
    assert limited.action == Action.LIMITED and "max_open_prs" in limited.message
    assert len(github.pulls) == 1
    state = RunState()
    settings = PublishSettings(max_prs_per_run=1)
    first = publish(make_run("custom_op"), settings, state=state)
    second = publish(make_run("function"), settings, state=state)
    assert (first.action, second.action) == (Action.CREATED, Action.LIMITED)
    assert "max_prs_per_run" in second.message


def test_fork_push_and_head_owner(publish, make_run, github, target_repo, tmp_path):
    git.Repo(target_repo).create_remote("fork", str(_bare(tmp_path, "forker")))
    outcome = publish(make_run("function"), PublishSettings(fork="forker/minisrv"))
    assert outcome.action == Action.CREATED
    assert github.pulls[1]["head_owner"] == "forker"
    assert "kbot/silu_and_mul" in [h.name for h in git.Repo(_bare(tmp_path, "forker")).heads]
    assert "kbot/silu_and_mul" not in [h.name for h in git.Repo(_bare(tmp_path)).heads]


def test_signoff_trailer_by_config(publish, make_run, tmp_path):
    publish(make_run("custom_op"), PublishSettings(signoff=True))
    commit = _branch_commits(_bare(tmp_path), "kbot/rmsnorm")[0]
    assert "Signed-off-by: Ada Maintainer <ada@example.com>" in commit.message


def test_server_errors_and_secondary_rate_limits_are_retried(publish, make_run, github):
    github.fail("POST", r"/pulls$", 502, times=2, message="Server Error")
    github.fail(
        "GET",
        r"/pulls$",
        403,
        times=1,
        message="You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    )
    outcome = publish(make_run("custom_op"))
    assert outcome.action == Action.CREATED and len(github.pulls) == 1


@pytest.mark.parametrize(
    "status, message, expected",
    [
        (401, "Bad credentials", "401"),
        (403, "Resource not accessible by integration", "--fork OWNER/REPO"),
        (404, "Not Found", "publish.repo"),
        (422, "Validation Failed", "base branch 'main' exists"),
        (503, "Service Unavailable", "kept failing"),
    ],
)
def test_errors_become_one_line_that_says_what_to_fix(
    publish, make_run, github, status, message, expected
):
    times = 10 if status >= 500 else 1
    github.fail(
        "POST" if status in (403, 422) else "GET", r"/pulls$", status, times=times, message=message
    )
    with pytest.raises(ToolError) as info:
        publish(make_run("custom_op"))
    text = str(info.value)
    assert expected in text and "\n" not in text and TOKEN not in text


def test_missing_or_wrong_token(publish, make_run, github):
    with pytest.raises(ToolError, match=r"\$GITHUB_TOKEN"):
        publish(make_run("custom_op"), environ={})
    with pytest.raises(ToolError, match="401") as info:
        publish(make_run("custom_op"), environ={"GITHUB_TOKEN": "ghp_wrongtoken_0000"})
    assert "ghp_wrongtoken_0000" not in str(info.value)


def test_token_never_reaches_files_drafts_or_commits(publish, make_run, github, tmp_path):
    outcome = publish(make_run("custom_op"))
    for path in (tmp_path / "work").rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            assert TOKEN not in path.read_text(errors="replace"), path
    assert TOKEN not in git.Repo(_bare(tmp_path)).git.log("-p", "--all")
    assert TOKEN not in json.dumps(github.pulls) + str(outcome)


def test_dry_run_sends_nothing_and_writes_every_draft(publish, make_run, github, tmp_path):
    outcome = publish(make_run("custom_op"), push=False, environ={})
    assert outcome.action == Action.DRY_RUN and github.requests == []
    drafts = outcome.drafts_dir
    assert {p.name for p in drafts.iterdir()} == {
        "pr_title.txt",
        "pr_body.md",
        "pr.json",
        "changes.patch",
    }
    record = json.loads((drafts / "pr.json").read_text())
    assert record["head"] == "kbot/rmsnorm" and record["labels"] == ["kbot", "performance"]
    assert "kbot/rmsnorm" not in [r.name for r in git.Repo(_bare(tmp_path)).heads]
    clone = git.Repo(outcome.clone_dir)
    assert clone.git.rev_parse("kbot/rmsnorm") == outcome.commit_sha
    # The patch applies to the base with git am.
    assert (drafts / "changes.patch").read_text().startswith("From ")
    assert replace(PublishSettings(), draft=False).draft is False


def test_failed_https_push_does_not_leak_the_token(publish, make_run, target_repo, tmp_path):
    from kbot.publish.gitops import Workspace, locate_repo

    outcome = publish(make_run("custom_op"), push=False, environ={})
    workspace = Workspace(locate_repo(target_repo), tmp_path / "work")
    with pytest.raises(ToolError) as info:
        workspace.push(outcome.branch, "https://127.0.0.1:9/octo/minisrv.git", TOKEN)
    text = str(info.value)
    assert "git push of kbot/rmsnorm" in text and TOKEN not in text and "\n" not in text


REMOTE_CANARY = "ghp_REMOTEcanary0123456789abcdefXYZ"


def test_a_token_in_a_remote_url_is_stripped_and_masked(publish, make_run, github, target_repo):
    from kbot.publish.gitops import locate_repo, remote_url_for

    url = f"https://x-access-token:{REMOTE_CANARY}@127.0.0.1:9/forker/minisrv.git"
    git.Repo(target_repo).create_remote("forkremote", url)
    repo = locate_repo(target_repo)
    assert REMOTE_CANARY in repo.remote_secrets
    pushed_to = remote_url_for(repo, "forker/minisrv", "https://api.github.com")
    assert pushed_to == "https://127.0.0.1:9/forker/minisrv.git"
    with pytest.raises(ToolError) as info:
        publish(make_run("custom_op"), settings=replace(DEFAULTS, fork="forker/minisrv"))
    text = str(info.value)
    assert "git push of kbot/rmsnorm to https://127.0.0.1:9/forker/minisrv.git" in text
    assert REMOTE_CANARY not in text and REMOTE_CANARY[:8] not in text


def test_pr_title_body_and_commit_are_redacted(publish, make_run, github, tmp_path, monkeypatch):
    import kbot.publish.publisher as publisher

    canary = "sk-CANARYopenai0123456789abcdef"
    real = publisher.render_publication

    def leaky(plan):
        publication = real(plan)
        return replace(
            publication,
            title=f"{publication.title} {canary}",
            body=f"{publication.body}\nkey: {canary}",
            commit_message=f"{publication.commit_message}\n{canary}",
        )

    monkeypatch.setattr(publisher, "render_publication", leaky)
    publish(make_run("custom_op"), environ={**ENV, "OPENAI_API_KEY": canary})
    assert canary not in json.dumps(github.pulls) and "***" in github.pulls[1]["title"]
    assert canary not in git.Repo(_bare(tmp_path)).git.log("-p", "--all")


def test_messages_are_masked_before_they_are_cut():
    from kbot.publish.github import _github_message
    from kbot.publish.gitops import _stderr

    data = {"message": "x" * 290 + TOKEN}
    assert TOKEN[:8] not in _github_message(data, [TOKEN])
    assert TOKEN[:8] not in _github_message("y" * 190 + TOKEN, [TOKEN])
    error = git.GitCommandError(["git", "push"], 128, stderr="z" * 290 + TOKEN)
    assert TOKEN[:8] not in _stderr(error, [TOKEN])
