"""The thin command line: parse, dispatch to one module per subcommand, print text or JSON.

Every command accepts `--json`; exit codes are named in `kbot.errors.ExitCode`.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from types import ModuleType
from typing import TextIO

from kbot import __version__
from kbot.commands import COMMANDS
from kbot.errors import ExitCode, KbotError
from kbot.output import CommandResult, envelope


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors are one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # no `kbot optimize:` lead: `_fail` writes `kbot: error: ` before it, the hint names
        # the command
        raise _ArgumentError(f"{message} (see `{self.prog} --help`)")


class _ArgumentError(Exception):
    pass


def _command_module(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kbot",
        description="Find hot PyTorch ops, evolve faster Triton kernels for them, open PRs.",
    )
    parser.add_argument("--version", action="version", version=f"kbot {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        module = _command_module(name)
        command_parser = sub.add_parser(name, help=module.HELP, description=module.HELP)
        command_parser.add_argument(
            "--json", action="store_true", help="print one versioned JSON envelope on stdout"
        )
        command_parser.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
        module.add_arguments(command_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The stdout the command began with: a proposer's thread still running when the command
    # ends (one abandoned by Ctrl-C) may hold `sys.stdout` redirected to a buffer
    # (contextlib.redirect_stdout is process-wide), which would swallow the result.
    stdout = sys.stdout
    wants_json = "--json" in argv
    debug = "--debug" in argv
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except _ArgumentError as exc:
        return _fail("kbot", str(exc), ExitCode.BAD_INPUT, wants_json, stdout)
    if args.command is None:
        parser.print_help()
        return int(ExitCode.BAD_INPUT)
    try:
        result: CommandResult = _command_module(args.command).run(args)
    except KbotError as exc:
        if debug:
            raise
        return _fail(args.command, str(exc), exc.exit_code, wants_json, stdout)
    except KeyboardInterrupt:
        message = "interrupted; what was written stays; run the same command again"
        return _fail(args.command, message, ExitCode.INTERRUPTED, wants_json, stdout)
    except OSError as exc:
        if debug or exc.filename is None or exc.errno not in _PATH_ERRORS:
            raise  # not a path the user can fix: a bug to see in full
        return _fail(args.command, _path_error(exc), ExitCode.BAD_INPUT, wants_json, stdout)
    try:
        if wants_json:
            print(envelope(args.command, result.exit_code, result.data, None), file=stdout)
        elif result.text:
            print(result.text, file=stdout)
        # Out before the interpreter's teardown: a C++ thread torch or Triton leaves behind can
        # abort it ("terminate called without an active exception", seen after a stopped `kbot
        # run` on the H200), and a piped stdout still buffered would be lost with it.
        stdout.flush()
    except BrokenPipeError:  # `kbot config --show | head -3`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
    if result.notice:
        print(f"kbot: {result.notice}", file=sys.stderr, flush=True)
    return int(result.exit_code)


# A path that cannot be written as given: read-only, not allowed, a file where a folder is due
# (or the other way), a full disk.
_PATH_ERRORS = frozenset(
    getattr(errno, name)
    for name in "EROFS EACCES EPERM EEXIST ENOTDIR EISDIR ENOSPC ENAMETOOLONG".split()
)


def _path_error(exc: OSError) -> str:
    """`cannot write /ro/wd: Read-only file system`: the path and why, for a path the user gave
    (a work directory, an output file) that cannot be made or written."""
    reason = exc.strerror or type(exc).__name__
    return f"cannot write {exc.filename}: {reason}; pass a path kbot can write to"


def _fail(command: str, message: str, code: ExitCode, wants_json: bool, stdout: TextIO) -> int:
    if wants_json:
        print(envelope(command, code, None, message), file=stdout)
    # Ctrl-C is the user's choice, not an error: `kbot: interrupted; ...`
    lead = "kbot: " if code == ExitCode.INTERRUPTED else "kbot: error: "
    print(f"{lead}{message}", file=sys.stderr)
    stdout.flush()
    return int(code)
