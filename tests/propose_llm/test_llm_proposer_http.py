"""The llm proposer against a real HTTP server speaking the chat-completions API, through the
real openai client: replies of every shape, 429 then success, timeouts, usage, the key."""

import pytest

from kbot.propose.base import Parent, ProposeContext, source_hash
from kbot.propose.llm import LLMProposer, LLMSettings, ModelEndpoint, Price
from kbot.propose.llm.client import OpenAIChatClient

KEY_ENV = "KBOT_TEST_LLM_API_KEY"


def _proposer(server, *, samples=1, retries=2, timeout_s=5.0, prices=None, **settings):
    llm = LLMSettings(
        models=(ModelEndpoint("scripted-coder", server.base_url, KEY_ENV),),
        prices=prices or {},
        samples=samples,
        retries=retries,
        timeout_s=timeout_s,
        concurrency=2,
        **settings,
    )
    waits = []
    client = OpenAIChatClient(timeout_s, retries, sleep=waits.append)
    proposer = LLMProposer(llm, client)
    proposer.waits = waits
    return proposer


def _context(problem, parents=(), **kw):
    return ProposeContext(problem=problem, parents=tuple(parents), device="cpu", seed=7,
                          max_proposals=4, **kw)  # fmt: skip


def test_a_fenced_kernel_becomes_a_proposal_with_tokens_and_usd(chat, kernels, problem, api_key):
    reply = chat.Reply(kernels.fenced(kernels.GOOD), prompt_tokens=1200, completion_tokens=300)
    with chat.ChatServer(chat.replies(reply)) as server:
        proposer = _proposer(server, prices={"scripted-coder": Price(2.0, 8.0)})
        outcome = proposer.propose(_context(problem))
    (proposal,) = outcome.proposals
    assert proposal.source == kernels.GOOD and proposal.proposer == "llm"
    assert proposal.params["llm"]["mode"] == "seed" and proposal.parent_sha256 == ()
    assert outcome.tokens_used == 1500
    assert outcome.usd_spent == pytest.approx((1200 * 2.0 + 300 * 8.0) / 1e6)
    (call,) = outcome.calls
    assert call.status == "ok" and call.candidate_sha256 == source_hash(kernels.GOOD)


def test_the_key_goes_only_into_the_authorization_header(chat, kernels, problem, api_key):
    with chat.ChatServer(chat.replies(chat.Reply(kernels.fenced(kernels.GOOD)))) as server:
        outcome = _proposer(server).propose(_context(problem))
        (seen,) = server.requests
    assert seen.headers["authorization"] == f"Bearer {api_key}"
    assert api_key not in str(seen.body)
    assert api_key not in repr(outcome)


def test_the_prompt_states_the_rules_and_the_reference(chat, kernels, problem, api_key):
    from kbot.evaluate.static import RULES

    with chat.ChatServer(chat.replies(chat.Reply(kernels.fenced(kernels.GOOD)))) as server:
        _proposer(server).propose(_context(problem))
        (seen,) = server.requests
    system, user = seen.body["messages"]
    assert system["role"] == "system" and all(f"`{rule}`" in system["content"] for rule in RULES)
    assert "return x * 2.0" in user["content"] and "{'N': 1000}" in user["content"]
    assert seen.body["model"] == "scripted-coder" and seen.body["seed"] == 7 * 1009


def test_429_then_success_is_retried_with_backoff(chat, kernels, problem, api_key):
    script = chat.replies(
        chat.Reply(status=429, headers={"retry-after": "0.5"}),
        chat.Reply(status=503),
        chat.Reply(kernels.fenced(kernels.GOOD)),
    )
    with chat.ChatServer(script) as server:
        proposer = _proposer(server, retries=3)
        outcome = proposer.propose(_context(problem))
        assert len(server.requests) == 3
    assert len(outcome.proposals) == 1 and outcome.calls[0].attempts == 3
    assert len(proposer.waits) == 2 and 0.3 <= proposer.waits[0] <= 0.7  # Retry-After honoured


def test_a_rate_limit_that_persists_ends_as_a_typed_call(chat, problem, api_key):
    with chat.ChatServer(chat.replies(chat.Reply(status=429))) as server:
        outcome = _proposer(server, retries=1).propose(_context(problem))
    assert outcome.proposals == () and outcome.calls[0].status == "rate_limited"
    assert "rate_limited" in outcome.skipped_reason and outcome.tokens_used == 0


def test_a_timeout_costs_the_request_not_the_run(chat, kernels, problem, api_key):
    slow = chat.Reply(kernels.fenced(kernels.GOOD), delay_s=3.0)
    with chat.ChatServer(chat.replies(slow)) as server:
        outcome = _proposer(server, retries=0, timeout_s=0.5).propose(_context(problem))
    assert outcome.proposals == () and outcome.calls[0].status == "timeout"


def test_a_refused_key_is_not_retried_and_the_message_is_masked(chat, problem, api_key):
    with chat.ChatServer(chat.replies(chat.Reply(status=401))) as server:
        outcome = _proposer(server, retries=3).propose(_context(problem))
        assert len(server.requests) == 1
    assert outcome.calls[0].status == "refused" and api_key not in outcome.skipped_reason


@pytest.mark.parametrize(
    "content, status",
    [
        ("", "empty"),
        (None, "empty"),
        ("I'm sorry, I can't help with that.", "refusal"),
        ("Try a larger BLOCK_SIZE.", "no_code"),
        ("```python\ndef f():\n    return 1\n```", "no_model_new"),
    ],
)
def test_replies_without_a_candidate_are_recorded_not_raised(
    chat, problem, api_key, content, status
):
    with chat.ChatServer(chat.replies(chat.Reply(content))) as server:
        outcome = _proposer(server).propose(_context(problem))
    assert outcome.proposals == () and outcome.calls[0].status == status
    assert outcome.tokens_used == 1500  # paid for all the same


def test_several_blocks_and_prose_yield_the_last_model_new(chat, kernels, problem, api_key):
    text = (
        "First attempt:\n```python\n"
        + kernels.WRONG
        + "```\nOn reflection, a fix:\n"
        + kernels.fenced(kernels.GOOD, prose="")
    )
    with chat.ChatServer(chat.replies(chat.Reply(text))) as server:
        outcome = _proposer(server).propose(_context(problem))
    assert [p.source for p in outcome.proposals] == [kernels.GOOD]


def test_a_server_without_usage_counts_no_tokens(chat, kernels, problem, api_key):
    reply = chat.Reply(kernels.fenced(kernels.GOOD), usage=False)
    with chat.ChatServer(chat.replies(reply)) as server:
        outcome = _proposer(server, prices={"scripted-coder": Price(1.0, 1.0)}).propose(
            _context(problem)
        )
    assert len(outcome.proposals) == 1 and outcome.tokens_used == 0 and outcome.usd_spent == 0


def test_a_rejected_parent_is_repaired_from_its_error(chat, kernels, problem, api_key):
    parent = Parent(kernels.WRONG, source_hash(kernels.WRONG), "llm", False, None,
                    feedback=("[mismatch] case N=64: max abs error 1.9 (atol 1e-05)",),
                    stage="correctness")  # fmt: skip
    with chat.ChatServer(chat.replies(chat.Reply(kernels.fenced(kernels.GOOD)))) as server:
        outcome = _proposer(server).propose(_context(problem, [parent]))
        user = server.requests[0].body["messages"][1]["content"]
    assert "Repair it" in user and "max abs error 1.9" in user and "x * 3.0" in user
    (proposal,) = outcome.proposals
    assert proposal.parent_sha256 == (parent.source_sha256,)
    assert proposal.params["llm"]["mode"] == "repair"


def test_no_request_is_sent_once_the_budget_is_spent(chat, kernels, problem, api_key):
    with chat.ChatServer(chat.replies(chat.Reply(kernels.fenced(kernels.GOOD)))) as server:
        outcome = _proposer(server, samples=2).propose(_context(problem, tokens_left=0))
        assert server.requests == []
    assert [c.status for c in outcome.calls] == ["budget", "budget"]


def test_a_cached_reply_is_not_paid_again(chat, kernels, problem, api_key):
    class Replies:
        def __init__(self):
            self.kept = {}

        def reply(self, key):
            return self.kept.get(key)

    replies = Replies()
    with chat.ChatServer(chat.replies(chat.Reply(kernels.fenced(kernels.GOOD)))) as server:
        first = _proposer(server).propose(_context(problem, replies=replies))
        replies.kept = {c.prompt_sha256: (c.reply, c.finish_reason) for c in first.calls}
        again = _proposer(server).propose(_context(problem, replies=replies))
        assert len(server.requests) == 1
    assert [p.source for p in again.proposals] == [p.source for p in first.proposals]
    assert again.calls[0].cached and again.tokens_used == 0 and again.usd_spent == 0


def test_kernelbench_style_sends_the_one_shot_instruction(chat, kernels, problem, api_key):
    with chat.ChatServer(chat.replies(chat.Reply(kernels.fenced(kernels.GOOD)))) as server:
        outcome = _proposer(server, samples=3, style="kernelbench").propose(_context(problem))
        bodies = [r.body for r in server.requests]
    assert len(bodies) == 3 and all(len(b["messages"]) == 1 for b in bodies)
    assert (
        "Optimize the architecture named Model with custom Triton operators!"
        in (bodies[0]["messages"][0]["content"])
    )
    assert len({b["seed"] for b in bodies}) == 3  # pass@k: distinct samples
    assert {c.mode for c in outcome.calls} == {"kernelbench"}


def test_models_are_drawn_by_weight(chat, kernels, problem, api_key):
    with chat.ChatServer(chat.replies(chat.Reply(kernels.fenced(kernels.GOOD)))) as server:
        llm = LLMSettings(
            models=(
                ModelEndpoint("cheap", server.base_url, KEY_ENV, weight=3.0),
                ModelEndpoint("strong", server.base_url, KEY_ENV, weight=1.0),
                ModelEndpoint("never", server.base_url, KEY_ENV, weight=0.0),
            ),
            samples=8,
            concurrency=4,
        )
        proposer = LLMProposer(llm, OpenAIChatClient(5.0, 0))
        for seed in range(4):
            proposer.propose(ProposeContext(problem, (), "cpu", seed, max_proposals=8))
        models = [r.body["model"] for r in server.requests]
    assert len(models) == 32 and "never" not in models
    assert models.count("cheap") > models.count("strong") > 0


def test_a_key_cut_short_or_split_by_a_newline_is_masked_in_messages():
    from kbot.propose.llm.client import CallStatus

    key = "sk-proj-CANARY0123456789abcdefghijklmnopqrstuvwx"
    client = OpenAIChatClient(5.0, 0, environ={KEY_ENV: key + "\n"})
    # The key straddles the 300-character cut: no prefix of it may survive.
    cut = client._failed(CallStatus.CONNECTION, Exception("x" * 270 + key), 1).message
    # The variable's value ends in a newline; normalising whitespace first would hide it.
    split = client._failed(CallStatus.CONNECTION, Exception(f"bad key {key}\nretry"), 1).message
    for message in (cut, split):
        assert key[:12] not in message and "***" in message


def test_credentials_in_the_base_url_are_neither_shown_nor_stored():
    import dataclasses

    url = "https://user:URLcanary@127.0.0.1:9/v1?api-key=QUERYcanary"
    endpoint = ModelEndpoint("scripted-coder", url, KEY_ENV)
    shown = str(endpoint) + str(dataclasses.asdict(endpoint)) + endpoint.label
    assert "URLcanary" not in shown and "QUERYcanary" not in shown
    assert endpoint.base_url == "https://***@127.0.0.1:9/v1?api-key=***"
    assert endpoint.connect_url == url  # requests still go to the URL as configured


def test_an_unreachable_endpoint_is_not_asked_again_and_says_why(chat, kernels, problem, api_key):
    """An endpoint no request reached after the client's retries is dropped for the run: the
    next rounds skip at once with the reason, rather than each waiting out every retry."""
    import socket

    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    dead = ModelEndpoint("scripted-coder", f"http://127.0.0.1:{port}/v1", KEY_ENV)
    with chat.ChatServer(chat.replies(chat.Reply(kernels.fenced(kernels.GOOD)))) as server:
        live = ModelEndpoint("other-coder", server.base_url, KEY_ENV)
        llm = LLMSettings(models=(dead, live), samples=4, retries=1, timeout_s=5.0)
        proposer = LLMProposer(llm, OpenAIChatClient(5.0, 1, sleep=lambda s: None))
        first = proposer.propose(_context(problem))
        assert {c.status for c in first.calls if c.model == "scripted-coder"} == {"connection"}
        assert first.proposals  # the reachable model still answers
        second = proposer.propose(_context(problem))
    assert all(c.model == "other-coder" for c in second.calls) and second.proposals
    alone = LLMProposer(LLMSettings(models=(dead,), retries=1, timeout_s=5.0),
                        OpenAIChatClient(5.0, 1, sleep=lambda s: None))  # fmt: skip
    assert alone.propose(_context(problem)).calls[0].status == "connection"
    again = alone.propose(_context(problem))
    assert again.calls == () and "is not asked again this run after 2 attempt(s)" in (
        again.skipped_reason or ""
    )
