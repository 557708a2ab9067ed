"""The `llm` proposer: any OpenAI-compatible model, inside the evolutionary loop.

Per call it plans `samples` requests (never more than the loop asked for): a task per request
(seed from the reference without parents; repair for a rejected parent; crossover, diff or full
rewrite for accepted ones; the kernelbench style always prompts from the reference), a model
drawn by weight, all from a generator seeded by the context, so a resumed run sends the same
prompts and finds its replies in the store. Requests run `concurrency` at a time; the token and
money budgets left are checked before each wave. Every request ends as a `ModelCall` with a
status (a parsed candidate, a typed parse failure, a transport failure); none raises.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kbot.propose.base import (
    ModelCall,
    Parent,
    Proposal,
    ProposeContext,
    ProposeOutcome,
    source_hash,
)
from kbot.propose.llm.client import (
    CallStatus,
    ChatClient,
    ChatRequest,
    ChatResult,
    OpenAIChatClient,
)
from kbot.propose.llm.parse import parse_reply
from kbot.propose.llm.prompts import Mode, build_messages, prompt_hash
from kbot.propose.llm.settings import LLMSettings, ModelEndpoint

CROSSOVER_SHARE = 0.25  # of requests with two accepted parents
# A call that ends so after the client's retries will not go better later in the run (the host
# unreachable; the key refused, the model unknown): its endpoint is not asked again, and the
# search says why, rather than waiting out every retry of every later round.
_UNREACHABLE = CallStatus.CONNECTION.value
_REFUSED_FOR_GOOD = re.compile(r"^refused \(HTTP 40[134]\)")
DIFF_SHARE = 0.5  # of the other requests with an accepted parent


class LLMProposer:
    name = "llm"
    # A model's reply takes seconds to minutes: the loop asks in the background and evaluates
    # the other proposers' candidates meanwhile (kbot.search.overlap).
    overlaps_evaluation = True

    def __init__(self, settings: LLMSettings, client: ChatClient | None = None) -> None:
        self.settings = settings
        self.client = client or OpenAIChatClient(settings.timeout_s, settings.retries)
        # (model, shown base_url) -> why that endpoint is not asked again this run
        self._down: dict[tuple[str, str], str] = {}

    def propose(self, context: ProposeContext) -> ProposeOutcome:
        if not self.settings.configured:
            return ProposeOutcome((), skipped_reason="llm: no model set (--llm-model or llm.model)")
        models = [m for m in self.settings.models if _slot(m) not in self._down]
        if not models:
            return ProposeOutcome((), skipped_reason="llm: " + "; ".join(self._down.values()))
        if (
            self.settings.style == "evolve"
            and context.parents
            and not any(p.source for p in context.parents)
        ):
            return ProposeOutcome((), skipped_reason="llm: the parents carry no source")
        plans = [
            self._plan(context, i, models)
            for i in range(min(context.max_proposals, self.settings.samples))
        ]
        width = max(1, self.settings.concurrency)
        calls: list[ModelCall] = []
        proposals: list[Proposal] = []
        tokens = 0
        usd = 0.0
        with ThreadPoolExecutor(max_workers=width) as pool:
            for start in range(0, len(plans), width):
                wave = plans[start : start + width]
                if _spent(context, tokens, usd):
                    calls.extend(_unsent(plan) for plan in wave)
                    continue
                # the store is read here, in the caller's thread; only requests go to the pool
                cached = {p.key: context.replies.reply(p.key) for p in wave if context.replies}
                sent = [p for p in wave if cached.get(p.key) is None]
                results = dict(zip((p.key for p in sent), pool.map(self._request, sent)))
                for plan in wave:
                    call, source = self._outcome(plan, cached.get(plan.key), results.get(plan.key))
                    calls.append(call)
                    tokens += call.prompt_tokens + call.completion_tokens
                    usd += call.usd
                    if source is not None:
                        proposals.append(self._proposal(plan, call, source))
        self._mark_down(calls)
        skipped = None if proposals else "llm: " + _summary(calls)
        return ProposeOutcome(tuple(proposals), skipped, tokens, usd, tuple(calls))

    # planning

    def _mark_down(self, calls: Sequence[ModelCall]) -> None:
        """Endpoints whose every request this round ended unreachable or refused for good."""
        reached = {(c.model, c.base_url) for c in calls if c.cached or c.answered}
        for call in calls:
            slot = (call.model, call.base_url)
            lost = call.status == _UNREACHABLE or _REFUSED_FOR_GOOD.match(call.message or "")
            if lost and slot not in reached and slot not in self._down:
                where = call.base_url or "the openai default endpoint"
                self._down[slot] = (
                    f"{call.model} at {where} is not asked again this run after "
                    f"{call.attempts} attempt(s): {call.message}"
                )
                reached.add(slot)

    def _plan(self, context: ProposeContext, index: int, models: Sequence[ModelEndpoint]) -> _Plan:
        rng = random.Random(f"llm/{context.seed}/{index}")
        mode, parents = self._task(context.parents, rng)
        endpoint = _pick(models, rng)
        messages = build_messages(mode, context.problem, parents, context.device)
        seed = context.seed * 1009 + index
        key = prompt_hash(
            messages,
            model=endpoint.model,
            base_url=endpoint.base_url,
            temperature=self.settings.temperature,
            max_tokens=self.settings.max_reply_tokens,
            seed=seed,
        )
        return _Plan(index, mode, parents, endpoint, messages, seed, key)

    def _task(
        self, parents: tuple[Parent, ...], rng: random.Random
    ) -> tuple[Mode, tuple[Parent, ...]]:
        if self.settings.style == "kernelbench":
            return Mode.KERNELBENCH, ()
        if not parents:
            return Mode.SEED, ()
        accepted = [p for p in parents if p.accepted]
        if not accepted:
            return Mode.REPAIR, (parents[0],)
        ranked = tuple(sorted(accepted, key=lambda p: p.fitness or 0.0, reverse=True))
        if len(ranked) >= 2 and rng.random() < CROSSOVER_SHARE:
            return Mode.CROSSOVER, ranked[:2]
        return (Mode.DIFF if rng.random() < DIFF_SHARE else Mode.REWRITE), ranked

    # calling

    def _request(self, plan: _Plan) -> ChatResult:
        request = ChatRequest(plan.endpoint, plan.messages, self.settings.temperature,
                              self.settings.max_reply_tokens, plan.seed)  # fmt: skip
        return self.client.complete(request)

    def _outcome(
        self, plan: _Plan, cached: tuple[str, str | None] | None, result: ChatResult | None
    ) -> tuple[ModelCall, str | None]:
        """The request's record, and the candidate it gave (None when it gave none)."""
        if cached is not None:
            result = ChatResult(CallStatus.OK, text=cached[0], finish_reason=cached[1], attempts=1)
        assert result is not None
        price = self.settings.price_of(plan.endpoint.model)
        usd = (
            0.0
            if cached is not None or price is None
            else price.usd(result.prompt_tokens, result.completion_tokens)
        )
        common = dict(
            prompt_sha256=plan.key,
            model=plan.endpoint.model,
            base_url=plan.endpoint.base_url or "",
            mode=plan.mode.value,
            messages=plan.messages,
            cached=cached is not None,
            finish_reason=result.finish_reason,
            prompt_tokens=0 if cached is not None else result.prompt_tokens,
            completion_tokens=0 if cached is not None else result.completion_tokens,
            usd=usd,
            attempts=result.attempts,
            wall_s=result.wall_s,
        )
        if not result.ok:
            return ModelCall(status=result.status.value, message=result.message, **common), None
        base = plan.parents[0].source if plan.mode is Mode.DIFF else None
        parsed = parse_reply(result.text, result.finish_reason, base)
        if not parsed.ok or parsed.source is None:
            call = ModelCall(status=parsed.status.value, message=parsed.message, reply=result.text,
                             **common)  # fmt: skip
            return call, None
        call = ModelCall(status="ok", message="", reply=result.text,
                         candidate_sha256=source_hash(parsed.source), **common)  # fmt: skip
        return call, parsed.source

    def _proposal(self, plan: _Plan, call: ModelCall, source: str) -> Proposal:
        return Proposal(
            source=source,
            proposer=self.name,
            parent_sha256=tuple(p.source_sha256 for p in plan.parents),
            params={
                "llm": {
                    "model": plan.endpoint.model,
                    "mode": plan.mode.value,
                    "prompt_sha256": plan.key,
                    "cached": call.cached,
                }
            },
            note=f"llm {plan.mode.value} by {plan.endpoint.model}",
        )


@dataclass(frozen=True)
class _Plan:
    """One request to send: its task, parents, model, messages and cache key."""

    index: int
    mode: Mode
    parents: tuple[Parent, ...]
    endpoint: ModelEndpoint
    messages: tuple[dict[str, str], ...]
    seed: int
    key: str


def _slot(endpoint: ModelEndpoint) -> tuple[str, str]:
    return endpoint.model, endpoint.base_url or ""


def _pick(models: Sequence[ModelEndpoint], rng: random.Random) -> ModelEndpoint:
    weights = [max(0.0, m.weight) for m in models]
    if sum(weights) <= 0:
        return models[0]
    return rng.choices(list(models), weights=weights, k=1)[0]


def _spent(context: ProposeContext, tokens: int, usd: float) -> bool:
    if context.tokens_left is not None and tokens >= context.tokens_left:
        return True
    return context.usd_left is not None and usd >= context.usd_left


def _unsent(plan: _Plan) -> ModelCall:
    return ModelCall(
        prompt_sha256=plan.key, model=plan.endpoint.model, base_url=plan.endpoint.base_url or "",
        mode=plan.mode.value, messages=plan.messages, status="budget",
        message="not sent: the run's token or money budget is spent", cached=False,
    )  # fmt: skip


def _summary(calls: Sequence[ModelCall]) -> str:
    if not calls:
        return "no request planned"
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.status] = counts.get(call.status, 0) + 1
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    last = next((c.message for c in reversed(calls) if c.message), "")
    return f"no candidate from {len(calls)} request(s) ({parts})" + (
        f"; last: {last}" if last else ""
    )
