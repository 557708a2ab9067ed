"""Python audit hooks (PEP 578) in a candidate's process: the second wall inside the sandbox.

Installed after torch and Triton are imported and warmed up, before the candidate's module is
imported. From then on the process may open files for reading only under the folders it was
given (its interpreter, packages, kbot, the system libraries, its own /proc entries and
private folder) and for writing only in its private folder; may start only the programs
Triton's compiler runs (ptxas, the C compiler), by path; may not create sockets, use ctypes,
start threads, fork, or import a module outside the ones loaded at installation (plus the few
the candidate convention names). A refused action raises PermissionError in the candidate and
is recorded; every reply to the judge carries the record, and the judge rejects the candidate
with the rule `sandbox`.

Audit hooks cannot be removed, but a determined candidate may get round one (they guard a
process from honest mistakes and common attacks, not from native code); the namespaces of
`kbot.evaluate.confine` are the guarantee, this is the named rule and the clear message.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NoReturn

from kbot.evaluate.names import ALLOWED_IMPORTS

# Modules a candidate may import beyond those already loaded: the static rules' allowlist,
# plus what the interpreter's kernels use on a CPU.
CANDIDATE_IMPORTS = frozenset(ALLOWED_IMPORTS) | {"collections", "numpy"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_EVENTS_WRITE = {
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.link",
    "os.symlink",
    "os.truncate",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
_PATH_EVENTS_READ = {"os.listdir", "os.scandir", "glob.glob", "os.chdir"}
_DENIED_PREFIXES = (
    "socket.",
    "ctypes.",
    "_ctypes.",
    "winreg.",
    "sqlite3.",
    "http.",
    "urllib.",
    "ftplib.",
    "smtplib.",
    "poplib.",
    "imaplib.",
    "nntplib.",
    "telnetlib.",
    "webbrowser.",
    "pty.",
)
_DENIED_EVENTS = {
    "os.system",
    "os.fork",
    "os.forkpty",
    "os.exec",
    "os.spawn",
    "os.kill",
    "os.killpg",
    "os.putenv",
    "os.unsetenv",
    "_thread.start_new_thread",
    "signal.pthread_kill",
    "mmap.__new__",
    "sys.setprofile",
    "sys.settrace",
    "sys.remote_exec",
    "sys.monitoring.register_callback",
}


@dataclass
class Policy:
    readable: tuple[str, ...]
    writable: tuple[str, ...]
    programs: tuple[str, ...]  # executables that may be started, by real path
    imports: frozenset[str]
    refused: list[str] = field(default_factory=list)

    def check(self, event: str, args: tuple) -> str | None:
        """Why `event` is refused, or None."""
        if event == "open":
            return self._open(args)
        if event == "import":
            top = str(args[0]).split(".")[0]
            if top in self.imports or top.startswith("kbot_candidate_"):
                return None
            return f"importing {args[0]}"
        if event in ("subprocess.Popen", "os.posix_spawn"):
            program = args[0] if args[0] else (args[1][0] if args[1] else "")
            return None if self._program(program) else f"starting {program}"
        if event in ("os.symlink", "os.link") and args and not _local_link(args[0]):
            # A link is followed by whoever opens it, in their own namespace: `/proc/self/cwd`
            # is the candidate's private folder here and the judge's folder there. Only a link
            # to a neighbouring name, which means the same to both.
            return f"{event} to {os.fsdecode(args[0])}"
        if event in _PATH_EVENTS_WRITE:
            paths = [a for a in args if isinstance(a, (str, bytes, os.PathLike))]
            bad = [p for p in paths if not _under(p, self.writable)]
            return f"{event} on {os.fsdecode(bad[0])}" if bad else None
        if event in _PATH_EVENTS_READ:
            path = args[0] if args else "."
            if path is None or isinstance(path, int) or _under(path, self.readable):
                return None
            return f"{event} of {os.fsdecode(path)}"
        if event in _DENIED_EVENTS or event.startswith(_DENIED_PREFIXES):
            return event
        return None

    def _open(self, args: tuple) -> str | None:
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if path is None or isinstance(path, int):
            return None  # an already-open descriptor
        writing = (isinstance(flags, int) and flags & _WRITE_FLAGS) or (
            isinstance(mode, str) and any(c in mode for c in "wax+")
        )
        if writing:
            return None if _under(path, self.writable) else f"writing {os.fsdecode(path)}"
        return None if _under(path, self.readable) else f"reading {os.fsdecode(path)}"

    def _program(self, program) -> bool:
        try:
            real = os.path.realpath(os.fsdecode(program))
        except (TypeError, ValueError):
            return False
        return real in self.programs


def _local_link(target) -> bool:
    """A link target that names something beside the link: relative, no `..`."""
    try:
        text = os.fsdecode(target)
    except TypeError:
        return False
    return bool(text) and not os.path.isabs(text) and ".." not in text.split(os.sep)


def _under(path, roots: Iterable[str]) -> bool:
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def install(policy: Policy) -> None:
    """Adds the hook for the rest of the process's life."""

    def hook(event: str, args: tuple) -> None:
        why = policy.check(event, args)
        if why is not None:
            _refuse(policy, why)

    sys.addaudithook(hook)


def _refuse(policy: Policy, why: str) -> NoReturn:
    if len(policy.refused) < 20:
        policy.refused.append(why)
    raise PermissionError(f"kbot's sandbox refused {why}")


def candidate_builtins(policy: Policy) -> dict:
    """The builtins the candidate's module runs with: Python's, but an `import` in its own code
    names one of the modules the static rules allow (ALLOWED_IMPORTS), loaded or not. The audit
    hook's `import` event fires only for a module not loaded yet, so `import gc` (or codecs,
    contextvars, os: all loaded by torch) went through it and reached state no walk compares
    (red-team round eleven, static rules off). Library code keeps its own builtins."""
    import builtins

    real_import = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        # a str exactly: a subclass's own __str__ or split could name one module and import another
        if type(name) is not str or level != 0 or str.split(name, ".")[0] not in ALLOWED_IMPORTS:
            _refuse(policy, f"importing {str.__repr__(name)} in the candidate's code")
        return real_import(name, globals, locals, fromlist, level)

    table = dict(vars(builtins))
    table["__import__"] = guarded_import
    return table


def programs_for_triton() -> tuple[str, ...]:
    """ptxas (Triton's own, or the one TRITON_PTXAS_PATH names) and the C compiler Triton's
    driver builds its launchers with, as real paths."""
    import shutil

    found = []
    try:
        import triton

        root = os.path.dirname(triton.__file__)
        for dirpath, _, files in os.walk(os.path.join(root, "backends")):
            found += [
                os.path.join(dirpath, f)
                for f in files
                if f.startswith(("ptxas", "cuobjdump", "nvdisasm"))
            ]
    except ImportError:
        pass
    for name in (
        os.environ.get("TRITON_PTXAS_PATH"),
        os.environ.get("CC"),
        "cc",
        "gcc",
        "clang",
        "ptxas",
    ):
        path = shutil.which(name) if name else None
        if path:
            found.append(path)
    return tuple(sorted({os.path.realpath(p) for p in found}))
