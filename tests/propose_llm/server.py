"""A real OpenAI-compatible chat-completions server for the tests: an HTTP server in a thread
that answers `POST /v1/chat/completions` from a script, so the real `openai` client runs over
HTTP exactly as against OpenAI, vLLM, SGLang or Ollama.

A script is a callable `(request body, request number) -> Reply`; `replies(...)` makes one
from a list played in order (the last repeats). Every request is kept (body and headers) for
assertions: what the model was sent, and that the key went only into the Authorization header.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    content: str | None = ""
    status: int = 200
    finish_reason: str = "stop"
    prompt_tokens: int = 1000
    completion_tokens: int = 500
    delay_s: float = 0.0  # sleep before answering: a timeout
    headers: dict[str, str] = field(default_factory=dict)
    usage: bool = True  # False: a server that reports no usage


Script = Callable[[dict[str, Any], int], Reply]


def replies(*sequence: Reply) -> Script:
    def script(body: dict[str, Any], number: int) -> Reply:
        return sequence[min(number, len(sequence) - 1)]

    return script


@dataclass
class Seen:
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def text(self) -> str:
        return "\n".join(m["content"] for m in self.body["messages"])


class ChatServer:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    number = len(server.requests)
                    server.requests.append(
                        Seen(body, {k.lower(): v for k, v in self.headers.items()})
                    )
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = server.script(body, number)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    self._send(
                        reply.status,
                        {"error": {"message": f"scripted {reply.status}", "type": "scripted"}},
                        reply.headers,
                    )
                    return
                payload: dict[str, Any] = {
                    "id": f"chatcmpl-{number}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": reply.finish_reason,
                            "message": {"role": "assistant", "content": reply.content},
                        }
                    ],
                }
                if reply.usage:
                    payload["usage"] = {
                        "prompt_tokens": reply.prompt_tokens,
                        "completion_tokens": reply.completion_tokens,
                        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                    }
                self._send(200, payload, reply.headers)

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
