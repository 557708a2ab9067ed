"""The subcommands: a plain dict from name to module, built in one place.

Each module defines `HELP` (one line), `add_arguments(parser)` and `run(args) -> CommandResult`.
Modules are imported only when their command runs, so `kbot --help` stays fast.
"""

from __future__ import annotations

COMMANDS: dict[str, str] = {
    "optimize": "kbot.commands.optimize",
    "config": "kbot.commands.config",
    "scan": "kbot.commands.scan",
    "eval": "kbot.commands.eval",
}
