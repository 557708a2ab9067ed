"""What the user's code prints while kbot traces, builds or measures it, kept out of kbot's
output, for the calling thread only.

`contextlib.redirect_stdout` swaps `sys.stdout` for the whole process: a proposer tracing in
one thread silenced the search's own thread too, and two overlapping redirects could leave
`sys.stdout` a buffer for good (after a Ctrl-C had abandoned a proposer's thread, `kbot`
printed nothing). Here `sys.stdout` becomes a proxy while any thread is quiet; it sends each
thread's writes to that thread's sink, or to the stream it replaced.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

_lock = threading.Lock()
_users = 0


class _PerThreadStdout:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.local = threading.local()

    def _target(self) -> Any:
        sink = getattr(self.local, "sink", None)
        return self.stream if sink is None else sink

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, isatty: the stream's own
        return getattr(self._target(), name)


@contextlib.contextmanager
def quiet_stdout(sink: io.StringIO | None = None) -> Iterator[io.StringIO]:
    """Within the block, this thread's prints go to `sink` (a fresh buffer by default)."""
    global _users
    sink = io.StringIO() if sink is None else sink
    with _lock:
        if not isinstance(sys.stdout, _PerThreadStdout):
            sys.stdout = _PerThreadStdout(sys.stdout)
        proxy = sys.stdout
        _users += 1
    previous = getattr(proxy.local, "sink", None)
    proxy.local.sink = sink
    try:
        yield sink
    finally:
        proxy.local.sink = previous
        with _lock:
            _users -= 1
            if _users == 0 and sys.stdout is proxy:
                sys.stdout = proxy.stream
