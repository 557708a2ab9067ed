"""Talking to an OpenAI-compatible chat-completions endpoint through the `openai` SDK.

The SDK is imported when the first request is sent (machines without it can run every other
proposer). Retries are kbot's own, not the SDK's, so each attempt is counted and its wait is
known: 429, 5xx, timeouts and dropped connections are retried with exponential backoff
(honouring `Retry-After`), anything else (a bad key, an unknown model) fails at once. Every
outcome is a `ChatResult` with a status; nothing here raises into the search loop.

The key is read from the environment variable the settings *name*, when the client is built;
it never enters a message, a log line or an error text (errors are masked with
`kbot.evaluate.credentials.mask`).
"""

from __future__ import annotations

import dataclasses
import enum
import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kbot.evaluate.credentials import mask, secret_values, url_credentials
from kbot.propose.llm.settings import ModelEndpoint

# When the variable holding the key is unset (a local vLLM, SGLang or Ollama server): the SDK
# insists on some key, and these servers ignore it.
NO_KEY = "EMPTY"
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0


class CallStatus(str, enum.Enum):
    OK = "ok"
    RATE_LIMITED = "rate_limited"  # 429 after every retry
    SERVER_ERROR = "server_error"  # 5xx after every retry
    TIMEOUT = "timeout"  # no reply within timeout_s, after every retry
    CONNECTION = "connection"  # the endpoint could not be reached
    REFUSED = "refused"  # 4xx other than 429: key, model or request is wrong; not retried
    NO_SDK = "no_sdk"  # the openai package is not installed


RETRIED = (CallStatus.RATE_LIMITED, CallStatus.SERVER_ERROR, CallStatus.TIMEOUT,
           CallStatus.CONNECTION)  # fmt: skip


@dataclass(frozen=True)
class ChatRequest:
    endpoint: ModelEndpoint
    messages: tuple[dict[str, str], ...]
    temperature: float
    max_tokens: int
    seed: int


@dataclass(frozen=True)
class ChatResult:
    status: CallStatus
    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    message: str = ""  # what went wrong, masked; "" when OK
    wall_s: float = 0.0
    retry_after_s: float | None = None  # what a 429 or 503 asked us to wait

    @property
    def ok(self) -> bool:
        return self.status is CallStatus.OK

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ChatClient(Protocol):
    def complete(self, request: ChatRequest) -> ChatResult: ...


class OpenAIChatClient:
    """One SDK client per (base URL, key variable), built on first use, shared by threads."""

    def __init__(
        self,
        timeout_s: float,
        retries: int,
        environ: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.timeout_s = timeout_s
        self.retries = retries
        self._environ = os.environ if environ is None else environ
        self._sleep = sleep
        self._clients: dict[tuple[str | None, str], Any] = {}
        self._lock = threading.Lock()

    def _key(self, endpoint: ModelEndpoint) -> str:
        return self._environ.get(endpoint.api_key_env) or NO_KEY

    def _client(self, endpoint: ModelEndpoint) -> Any:
        import openai

        slot = (endpoint.connect_url, endpoint.api_key_env)
        with self._lock:
            if slot not in self._clients:
                self._clients[slot] = openai.OpenAI(
                    base_url=endpoint.connect_url,
                    api_key=self._key(endpoint),
                    timeout=self.timeout_s,
                    max_retries=0,
                )
            return self._clients[slot]

    def complete(self, request: ChatRequest) -> ChatResult:
        started = time.monotonic()
        try:
            client = self._client(request.endpoint)
        except ImportError:
            return ChatResult(
                CallStatus.NO_SDK, message="the openai package is not installed: pip install openai"
            )
        attempt = 0
        while True:
            attempt += 1
            result = self._attempt(client, request, attempt)
            if result.status not in RETRIED or attempt > self.retries:
                return _with_wall(result, time.monotonic() - started)
            self._sleep(self._backoff_s(attempt, result))

    def _attempt(self, client: Any, request: ChatRequest, attempt: int) -> ChatResult:
        import openai

        try:
            response = client.chat.completions.create(
                model=request.endpoint.model,
                messages=list(request.messages),
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                seed=request.seed,
            )
        except openai.RateLimitError as exc:
            return self._failed(CallStatus.RATE_LIMITED, exc, attempt)
        except openai.APITimeoutError as exc:  # before APIConnectionError: it is a subclass
            return self._failed(CallStatus.TIMEOUT, exc, attempt)
        except openai.APIConnectionError as exc:
            return self._failed(CallStatus.CONNECTION, exc, attempt)
        except openai.APIStatusError as exc:
            status = CallStatus.SERVER_ERROR if exc.status_code >= 500 else CallStatus.REFUSED
            return self._failed(status, exc, attempt)
        except openai.OpenAIError as exc:  # a reply the SDK could not read
            return self._failed(CallStatus.SERVER_ERROR, exc, attempt)
        choice = response.choices[0] if response.choices else None
        usage = getattr(response, "usage", None)
        return ChatResult(
            CallStatus.OK,
            text=(choice.message.content or "") if choice is not None else "",
            finish_reason=getattr(choice, "finish_reason", None),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            attempts=attempt,
        )

    def _failed(self, status: CallStatus, exc: Exception, attempt: int) -> ChatResult:
        code = getattr(exc, "status_code", None)
        # Masked before the text is reflowed or cut: a key split by a newline, or cut short,
        # would no longer match.
        text = " ".join(mask(str(exc), self._secrets()).split())[:300]
        message = f"{status.value}{f' (HTTP {code})' if code else ''}: {text}"
        return ChatResult(
            status, attempts=attempt, message=message, retry_after_s=_retry_after_s(exc)
        )

    def _secrets(self) -> list[str]:
        """The keys of the endpoints in use, every credential variable's value, and whatever
        userinfo or query value the endpoints' URLs carry."""
        keys = [self._environ.get(k, "") for k in {e for _, e in self._clients}]
        urls = [url_credentials(url) for url, _ in self._clients]
        return [*keys, *secret_values(self._environ), *(v for found in urls for v in found)]

    def _backoff_s(self, attempt: int, result: ChatResult) -> float:
        wait = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1))
        if result.retry_after_s is not None:
            wait = min(BACKOFF_CAP_S, result.retry_after_s)
        return wait * (0.75 + 0.5 * random.random())


def _retry_after_s(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _with_wall(result: ChatResult, wall_s: float) -> ChatResult:
    return dataclasses.replace(result, wall_s=wall_s)
