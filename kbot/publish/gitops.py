"""Git for the publisher: a branch `kbot/<op>` with one commit, made in kbot's own clone under
the work directory, so the user's working tree, index and current branch are never touched.

The clone is refreshed from the user's repository at each run; each op's branch is re-created
from the base branch, so a branch always holds exactly one kbot commit on top of the base.
Pushing uses the token through git's environment (`GIT_CONFIG_*`), never the URL or the
command line, so it cannot show up in an error message or a process list; credentials written
into a remote's URL (`https://x-access-token:TOKEN@host/o/r.git`) are stripped before the URL
is used or shown, and masked wherever git's own messages repeat them.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

import git

from kbot.errors import ToolError
from kbot.evaluate.credentials import secret_values, strip_userinfo, url_credentials
from kbot.publish.adapters import FileChange
from kbot.publish.redact import redact
from kbot.publish.repo_style import ToolRun, apply_style

KBOT_NAME = "kbot"
KBOT_EMAIL = "kbot@users.noreply.github.com"
_BASE_REF = "refs/kbot/base"
_GITHUB_REMOTE = re.compile(r"(?:[:/])(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class RepoInfo:
    root: Path  # the user's repository (top level)
    scanned_prefix: str  # the scanned path inside it, "" or ending in "/"
    origin_url: str | None  # without userinfo
    signoff_identity: str  # "Name <email>" for a Signed-off-by trailer
    remote_secrets: tuple[str, ...] = ()  # the userinfo written in the remotes' URLs


@dataclass(frozen=True)
class BranchResult:
    branch: str
    base_sha: str
    commit_sha: str
    clone: Path
    patch: str  # `git format-patch` of the commit
    style: tuple[ToolRun, ...] = ()  # the repository's formatters and linters on the files


def locate_repo(path: Path) -> RepoInfo:
    """The git repository holding `path`; raises ToolError when there is none."""
    try:
        repo = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ToolError(
            f"{path} is not inside a git repository; kbot makes its branches from one "
            "(run `git init && git add -A && git commit -m init` there)"
        ) from None
    if repo.working_tree_dir is None:
        raise ToolError(f"{path} is a bare repository; run kbot in a checkout of it")
    root = Path(repo.working_tree_dir).resolve()
    relative = Path(path).resolve().relative_to(root).as_posix()
    prefix = "" if relative in ("", ".") else relative + "/"
    origin = next((r for r in repo.remotes if r.name == "origin"), None)
    reader = repo.config_reader()
    name = reader.get_value("user", "name", KBOT_NAME)
    email = reader.get_value("user", "email", KBOT_EMAIL)
    return RepoInfo(
        root=root,
        scanned_prefix=prefix,
        origin_url=strip_userinfo(origin.url) if origin is not None else None,
        signoff_identity=f"{name} <{email}>",
        remote_secrets=tuple(
            secret for remote in repo.remotes for url in remote.urls for secret in _userinfo(url)
        ),
    )


def _userinfo(url: str) -> tuple[str, ...]:
    """The user and password written in a URL (`https://user:token@host/...`)."""
    return url_credentials(url) if "://" in url else ()


def github_repo_of(url: str | None) -> str | None:
    """`owner/name` from a remote URL (https, ssh or a path ending in owner/name.git)."""
    if not url:
        return None
    match = _GITHUB_REMOTE.search(url)
    return f"{match['owner']}/{match['name']}" if match else None


def remote_url_for(repo: RepoInfo, full_name: str, github_base_url: str) -> str:
    """Where to push for `owner/name`: a remote of the user's repository pointing there, else
    the HTTPS URL on the GitHub host behind `github_base_url`; never with credentials in it
    (the token goes in through git's environment, see `Workspace.push`)."""
    user_repo = git.Repo(repo.root)
    for remote in user_repo.remotes:
        for url in remote.urls:
            if github_repo_of(url) == full_name:
                return strip_userinfo(url)
    if repo.origin_url and github_repo_of(repo.origin_url) == full_name:
        return strip_userinfo(repo.origin_url)
    host = re.sub(r"^https?://", "", github_base_url).split("/")[0]
    host = "github.com" if host == "api.github.com" else host
    return f"https://{host}/{full_name}.git"


class Workspace:
    """kbot's clone of the user's repository at `<work_dir>/publish/repo`."""

    def __init__(self, repo: RepoInfo, work_dir: Path) -> None:
        self.repo = repo
        self.path = work_dir / "publish" / "repo"

    def _clone(self) -> git.Repo:
        if (self.path / ".git").is_dir():
            return git.Repo(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return _git(lambda: git.Repo.clone_from(str(self.repo.root), self.path, no_checkout=True))

    def checkout_base(self, base_branch: str) -> tuple[git.Repo, str]:
        """Fetches the base branch from the user's repository (their `origin/<base>` when they
        have one, being the newer) and checks it out detached in the clone."""
        user = git.Repo(self.repo.root)
        candidates = [f"refs/remotes/origin/{base_branch}", f"refs/heads/{base_branch}"]
        ref = next((c for c in candidates if _has_ref(user, c)), None)
        if ref is None:
            raise ToolError(
                f"base branch {base_branch!r} not found in {self.repo.root}; set "
                "publish.base_branch in .kbot.yml (e.g. master) or create the branch"
            )
        clone = self._clone()
        _git(lambda: clone.git.fetch("--force", str(self.repo.root), f"+{ref}:{_BASE_REF}"))
        _git(lambda: clone.git.checkout("--force", "--detach", _BASE_REF))
        _git(lambda: clone.git.clean("-fdx"))
        return clone, clone.git.rev_parse(_BASE_REF)

    def commit(
        self,
        branch: str,
        files: tuple[FileChange, ...],
        message: str,
        signoff: bool,
    ) -> BranchResult:
        """Re-creates `branch` at the checked-out base with one commit holding `files`."""
        clone = git.Repo(self.path)
        base_sha = clone.git.rev_parse(_BASE_REF)
        _git(lambda: clone.git.checkout("--force", "-B", branch, _BASE_REF))
        written: dict[str, str | None] = {}
        for change in files:
            target = self.path / change.path
            target.parent.mkdir(parents=True, exist_ok=True)
            written[change.path] = target.read_text("utf-8") if target.is_file() else None
            target.write_text(change.content, encoding="utf-8")
        style = apply_style(self.path, written)
        _git(lambda: clone.git.add("--", *[c.path for c in files]))
        if signoff:
            message = f"{message.rstrip()}\n\nSigned-off-by: {self.repo.signoff_identity}\n"
        env = {
            "GIT_AUTHOR_NAME": KBOT_NAME,
            "GIT_AUTHOR_EMAIL": KBOT_EMAIL,
            "GIT_COMMITTER_NAME": KBOT_NAME,
            "GIT_COMMITTER_EMAIL": KBOT_EMAIL,
        }
        with clone.git.custom_environment(**env):
            _git(lambda: clone.git.commit("--no-verify", "-q", "-m", message))
        patch = _git(lambda: clone.git.format_patch("-1", "--stdout", "HEAD"))
        return BranchResult(
            branch=branch,
            base_sha=base_sha,
            commit_sha=clone.head.commit.hexsha,
            clone=self.path,
            patch=patch + "\n",
            style=style,
        )

    def push(self, branch: str, url: str, token: str | None) -> None:
        """Force-pushes `branch` (kbot owns it: it is re-created from the base each run)."""
        clone = git.Repo(self.path)
        url = strip_userinfo(url)
        env = {"GIT_TERMINAL_PROMPT": "0"}
        if token and url.startswith("https://"):
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            env.update(
                GIT_CONFIG_COUNT="1",
                GIT_CONFIG_KEY_0="http.extraHeader",
                GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}",
            )
        secrets = [token, *self.repo.remote_secrets, *secret_values()]
        with clone.git.custom_environment(**env):
            try:
                clone.git.push("--force", url, f"refs/heads/{branch}:refs/heads/{branch}")
            except git.GitCommandError as exc:
                detail = _stderr(exc, secrets)
                raise ToolError(
                    f"git push of {branch} to {redact(url, secrets)} failed: {detail}; check that "
                    "the token may push there (contents: write), or push to a fork with --fork"
                ) from None


def changed_since_base(path: Path, base_branch: str, files: list[Path]) -> dict[Path, str]:
    """Of `files`, each whose working-tree content is not what the base branch holds (changes
    not committed, or not pushed to origin), with the ref compared against: kbot's branch is
    made from that ref, so a kernel checked against the working tree's code would patch other
    code. Empty outside a git repository or without the branch (publishing says so)."""
    try:
        user = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return {}
    if user.working_tree_dir is None:
        return {}
    candidates = [f"refs/remotes/origin/{base_branch}", f"refs/heads/{base_branch}"]
    ref = next((c for c in candidates if _has_ref(user, c)), None)
    if ref is None:
        return {}
    root = Path(user.working_tree_dir).resolve()
    changed: dict[Path, str] = {}
    for file in files:
        try:
            relative = file.resolve().relative_to(root).as_posix()
        except ValueError:
            continue  # outside the repository: not patched by a branch of it
        shown = ref.removeprefix("refs/remotes/").removeprefix("refs/heads/")
        try:
            user.git.cat_file("-e", f"{ref}:{relative}")
            user.git.diff("--quiet", ref, "--", relative)
        except git.GitCommandError:
            changed[file] = shown
    return changed


def _has_ref(repo: git.Repo, ref: str) -> bool:
    try:
        repo.git.rev_parse("--verify", "--quiet", ref)
        return True
    except git.GitCommandError:
        return False


def _stderr(exc: git.GitCommandError, secrets: list[str | None]) -> str:
    """git's message, one line, secrets masked before it is cut (a cut secret would not match)."""
    text = redact(str(exc.stderr or exc), secrets).strip().replace("\n", " ")
    return re.sub(r"^stderr: ", "", text).strip("' ")[:300]


def _git(action):
    try:
        return action()
    except git.GitCommandError as exc:
        detail = _stderr(exc, [*secret_values()])
        raise ToolError(
            f"git {exc.command[1] if len(exc.command) > 1 else ''} failed: {detail}"
        ) from None
