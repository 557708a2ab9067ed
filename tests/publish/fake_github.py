"""A local HTTP server answering the GitHub REST endpoints kbot uses, with GitHub-shaped
payloads, so the real PyGithub client runs over HTTP in the tests.

Pull requests live in memory; their commits are read from a real bare repository (the
`origin` the tests push to), so "a human pushed to the branch" is a real git push. Failures
are scripted per endpoint: `server.fail("POST", r"/pulls$", 502, times=2)`.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse


@dataclass
class ScriptedFailure:
    method: str
    pattern: re.Pattern
    status: int
    times: int
    message: str
    headers: dict[str, str]


@dataclass
class FakeGitHub:
    owner: str
    name: str
    bare_repos: dict[str, Path]  # "owner/name" -> bare repository holding its branches
    token: str
    pulls: dict[int, dict] = field(default_factory=dict)
    comments: list[tuple[int, str]] = field(default_factory=list)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, auth
    failures: list[ScriptedFailure] = field(default_factory=list)
    next_number: int = 1
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def fail(self, method, pattern, status, times=1, message="", headers=None) -> None:
        self.failures.append(
            ScriptedFailure(method, re.compile(pattern), status, times, message, headers or {})
        )

    # -- payloads shaped like GitHub's ------------------------------------------------------

    def repo_payload(self, full_name: str) -> dict:
        owner, name = full_name.split("/")
        return {
            "id": abs(hash(full_name)) % 10**6,
            "name": name,
            "full_name": full_name,
            "owner": {"login": owner, "id": 1, "type": "User"},
            "private": False,
            "fork": full_name != self.full_name,
            "html_url": f"https://github.test/{full_name}",
            "url": f"{self.url}/repos/{full_name}",
            "default_branch": "main",
        }

    def pull_payload(self, pull: dict) -> dict:
        api = f"{self.url}/repos/{self.full_name}"
        head_repo = (
            f"{pull['head_owner']}/{self.name}"
            if pull["head_owner"] != self.owner
            else self.full_name
        )
        return {
            "id": 1000 + pull["number"],
            "number": pull["number"],
            "state": pull["state"],
            "title": pull["title"],
            "body": pull["body"],
            "draft": pull["draft"],
            "html_url": f"https://github.test/{self.full_name}/pull/{pull['number']}",
            "url": f"{api}/pulls/{pull['number']}",
            "issue_url": f"{api}/issues/{pull['number']}",
            "head": {
                "ref": pull["head"],
                "label": f"{pull['head_owner']}:{pull['head']}",
                "sha": self._branch_sha(head_repo, pull["head"]) or "0" * 40,
                "repo": self.repo_payload(head_repo),
            },
            "base": {
                "ref": pull["base"],
                "label": f"{self.owner}:{pull['base']}",
                "repo": self.repo_payload(self.full_name),
            },
            "labels": [
                {"id": i, "name": n, "color": "ededed"} for i, n in enumerate(pull["labels"])
            ],
            "user": {"login": "kbot-bot", "id": 2, "type": "Bot"},
            "merged": False,
        }

    def add_pull(self, head, title, body, head_owner=None, base="main", draft=True) -> dict:
        """A PR that exists before kbot runs (e.g. from an earlier run)."""
        with self.lock:
            number = self.next_number
            self.next_number += 1
            self.pulls[number] = {
                "number": number,
                "state": "open",
                "title": title,
                "body": body,
                "draft": draft,
                "head": head,
                "head_owner": head_owner or self.owner,
                "base": base,
                "labels": [],
            }
            return self.pulls[number]

    def open_pulls(self) -> list[dict]:
        return [p for p in self.pulls.values() if p["state"] == "open"]

    def _branch_sha(self, full_name: str, branch: str) -> str | None:
        bare = self.bare_repos.get(full_name)
        if bare is None:
            return None
        out = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            cwd=bare,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() or None

    def _commits(self, pull: dict) -> list[dict]:
        head_repo = (
            f"{pull['head_owner']}/{self.name}"
            if pull["head_owner"] != self.owner
            else self.full_name
        )
        bare = self.bare_repos[head_repo]
        if self._branch_sha(head_repo, pull["head"]) is None:
            return []  # a PR seeded by a test without a branch
        if head_repo != self.full_name:
            subprocess.run(
                [
                    "git",
                    "fetch",
                    "-q",
                    str(self.bare_repos[self.full_name]),
                    f"+refs/heads/{pull['base']}:refs/base/{pull['base']}",
                ],
                cwd=bare,
                check=True,
            )
            base = f"refs/base/{pull['base']}"
        else:
            base = f"refs/heads/{pull['base']}"
        log = subprocess.run(
            [
                "git",
                "log",
                "--reverse",
                "--format=%H%x00%an%x00%ae%x00%s",
                f"{base}..refs/heads/{pull['head']}",
            ],
            cwd=bare,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        commits = []
        for line in log.splitlines():
            sha, name, email, subject = line.split("\0")
            person = {"name": name, "email": email, "date": "2026-11-30T00:00:00Z"}
            commits.append(
                {
                    "sha": sha,
                    "url": f"{self.url}/repos/{head_repo}/commits/{sha}",
                    "commit": {"author": person, "committer": person, "message": subject},
                    "author": None,
                    "committer": None,
                }
            )
        return commits


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeGitHub/1.0"
    fake: FakeGitHub  # set per server class

    def log_message(self, *args) -> None:  # keep pytest output quiet
        pass

    def _send(self, status: int, payload, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}") if length else {}

    def _handle(self, method: str) -> None:
        fake = self.fake
        parsed = urlparse(self.path)
        path = parsed.path.removeprefix("/api/v3")  # GitHub Enterprise's API prefix
        auth = self.headers.get("Authorization")
        fake.requests.append((method, path, auth))
        for failure in fake.failures:
            if failure.times > 0 and failure.method == method and failure.pattern.search(path):
                failure.times -= 1
                self._body()
                return self._send(
                    failure.status,
                    {
                        "message": failure.message or "scripted failure",
                        "documentation_url": "https://docs.github.com/rest",
                    },
                    failure.headers,
                )
        if auth != f"token {fake.token}" and auth != f"Bearer {fake.token}":
            return self._send(
                401,
                {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
            )
        body = self._body() if method in ("POST", "PATCH") else {}
        route = re.match(r"^/repos/([^/]+)/([^/]+)(/.*)?$", path)
        if route is None or f"{route[1]}/{route[2]}" != fake.full_name:
            return self._send(
                404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            )
        rest = route[3] or ""
        with fake.lock:
            self._route(method, rest, body, parse_qs(parsed.query))

    def _route(self, method: str, rest: str, body: dict, query: dict) -> None:
        fake = self.fake
        if method == "GET" and rest == "":
            return self._send(200, fake.repo_payload(fake.full_name))
        if method == "GET" and rest == "/pulls":
            state = query.get("state", ["open"])[0]
            pulls = [p for p in fake.pulls.values() if state == "all" or p["state"] == state]
            return self._send(200, [fake.pull_payload(p) for p in pulls])
        if method == "POST" and rest == "/pulls":
            head = body["head"]
            owner, branch = head.split(":", 1) if ":" in head else (fake.owner, head)
            head_repo = f"{owner}/{fake.name}" if owner != fake.owner else fake.full_name
            errors = []
            if fake._branch_sha(fake.full_name, body["base"]) is None:
                errors.append({"resource": "PullRequest", "field": "base", "code": "invalid"})
            if fake._branch_sha(head_repo, branch) is None:
                errors.append({"resource": "PullRequest", "field": "head", "code": "invalid"})
            if any(
                p["head"] == branch and p["head_owner"] == owner and p["state"] == "open"
                for p in fake.pulls.values()
            ):
                errors.append(
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"A pull request already exists for {head}.",
                    }
                )
            if errors:
                return self._send(
                    422,
                    {
                        "message": "Validation Failed",
                        "errors": errors,
                        "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
                    },
                )
            number = fake.next_number
            fake.next_number += 1
            fake.pulls[number] = {
                "number": number,
                "state": "open",
                "title": body["title"],
                "body": body.get("body") or "",
                "draft": bool(body.get("draft")),
                "head": branch,
                "head_owner": owner,
                "base": body["base"],
                "labels": [],
            }
            return self._send(201, fake.pull_payload(fake.pulls[number]))
        match = re.match(r"^/(pulls|issues)/(\d+)(/\w+)?$", rest)
        if match is None or int(match[2]) not in fake.pulls:
            return self._send(
                404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            )
        pull = fake.pulls[int(match[2])]
        kind, tail = match[1], match[3] or ""
        if kind == "pulls" and method == "GET" and tail == "":
            return self._send(200, fake.pull_payload(pull))
        if kind == "pulls" and method == "PATCH" and tail == "":
            for key in ("title", "body", "state"):
                if key in body:
                    pull[key] = body[key]
            return self._send(200, fake.pull_payload(pull))
        if kind == "pulls" and method == "GET" and tail == "/commits":
            return self._send(200, fake._commits(pull))
        if kind == "issues" and method == "POST" and tail == "/labels":
            # GitHub takes `["a"]` or `{"labels": ["a"]}`; PyGithub sends the list.
            for label in body if isinstance(body, list) else body.get("labels", []):
                if label not in pull["labels"]:
                    pull["labels"].append(label)
            return self._send(
                200, [{"id": i, "name": n, "color": "ededed"} for i, n in enumerate(pull["labels"])]
            )
        if kind == "issues" and method == "POST" and tail == "/comments":
            fake.comments.append((pull["number"], body["body"]))
            return self._send(
                201, {"id": len(fake.comments), "body": body["body"], "user": {"login": "kbot-bot"}}
            )
        return self._send(
            404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
        )

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")


def serve(fake: FakeGitHub) -> tuple[ThreadingHTTPServer, threading.Thread]:
    handler = type("Handler", (_Handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/api/v3"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread
