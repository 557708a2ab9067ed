"""What the `llm` proposer is configured with: endpoints, prices, prompt style, limits.

Frozen records, resolved from `.kbot.yml` / `KBOT_LLM_*` / the command line by
`kbot.search.options.options_from_config` and stored with a run's options (so `--resume` talks
to the same models). Only the *name* of the variable holding a key is ever kept here; the key is
read from the environment when a request is sent (`kbot.propose.llm.client`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbot.evaluate.credentials import public_url

STYLES = ("evolve", "kernelbench")


@dataclass(frozen=True)
class ModelEndpoint:
    """One model behind one OpenAI-compatible endpoint; `weight` is its share of the calls.

    `base_url` is the form that is shown and stored (userinfo and query values masked, see
    `kbot.evaluate.credentials.public_url`); requests go to `connect_url`, the URL as configured,
    which is no dataclass field and so never reaches a run's stored options or report. A run
    resumed from its stored options reaches such a URL without those credentials: put a key in
    the variable named by `api_key_env` instead.
    """

    model: str
    base_url: str | None = None  # None: the openai SDK's default (api.openai.com)
    api_key_env: str = "OPENAI_API_KEY"  # the variable's NAME, never the key
    weight: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "_connect_url", self.base_url)
        object.__setattr__(self, "base_url", public_url(self.base_url))

    @property
    def connect_url(self) -> str | None:
        return self._connect_url

    @property
    def label(self) -> str:
        return f"{self.model}@{self.base_url or 'api.openai.com'}"


@dataclass(frozen=True)
class Price:
    """USD per million tokens, as providers publish them."""

    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0

    def usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.input_usd_per_mtok + completion_tokens * self.output_usd_per_mtok
        ) / 1e6


@dataclass(frozen=True)
class LLMSettings:
    models: tuple[ModelEndpoint, ...] = ()
    prices: dict[str, Price] = field(default_factory=dict)  # model name -> price
    style: str = "evolve"  # evolve | kernelbench (templates/prompts/)
    temperature: float = 0.7
    max_reply_tokens: int = 8192
    timeout_s: float = 180.0  # one request, the SDK's read timeout
    retries: int = 4  # on 429, 5xx, timeouts and dropped connections, with backoff
    samples: int = 2  # requests per proposer call (pass@k width)
    concurrency: int = 0  # requests in flight at once; 0: the evaluator pool's width

    @property
    def configured(self) -> bool:
        return bool(self.models)

    def price_of(self, model: str) -> Price | None:
        return self.prices.get(model)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> LLMSettings:
        """The stored form; runs recorded before the llm proposer existed have none."""
        if not data:
            return cls()
        fields = dict(data)
        fields["models"] = tuple(ModelEndpoint(**m) for m in fields.get("models", ()))
        fields["prices"] = {n: Price(**p) for n, p in fields.get("prices", {}).items()}
        return cls(**fields)


def settings_from_config(llm: Any, source_of: Any) -> LLMSettings:
    """`LLMSettings` from a resolved `kbot.config.LLMConfig`: `llm.model` (with `base_url` and
    `api_key_env`) first, then each of `llm.models`, which inherit those two when they omit
    them. A key variable whose name kbot would not recognise as a credential is an error: the
    evaluator keeps only such variables out of a candidate's environment."""
    from kbot.errors import ConfigError
    from kbot.evaluate.credentials import EXTRA_NAMES_VARIABLE, is_secret_name

    models = []
    if llm.model:
        models.append(ModelEndpoint(llm.model, llm.base_url, llm.api_key_env))
    for item in llm.models:
        models.append(
            ModelEndpoint(
                model=item["model"],
                base_url=item.get("base_url", llm.base_url),
                api_key_env=item.get("api_key_env", llm.api_key_env),
                weight=float(item.get("weight", 1.0)),
            )
        )
    for endpoint in models:
        if not is_secret_name(endpoint.api_key_env):
            raise ConfigError(
                f"`llm.api_key_env` {endpoint.api_key_env!r} (from "
                f"{source_of('llm.api_key_env')}) is not a name kbot treats as a credential, so "
                "the key could reach a candidate's environment: use a name containing KEY or "
                f"TOKEN (e.g. MY_LLM_API_KEY), or list it in {EXTRA_NAMES_VARIABLE}"
            )
    prices = {
        name: Price(p.get("input", 0.0), p.get("output", 0.0)) for name, p in llm.prices.items()
    }
    return LLMSettings(
        models=tuple(models),
        prices=prices,
        style=llm.style,
        temperature=llm.temperature,
        max_reply_tokens=llm.max_reply_tokens,
        timeout_s=llm.timeout_s,
        retries=llm.retries,
        samples=llm.samples,
        concurrency=llm.concurrency,
    )
