"""The llm proposer inside the search loop (a fake evaluator, the real HTTP client): the money
and token stops, the reply cache on resume, trajectories and their SFT export, the key."""

import json
import sqlite3

from kbot.cli import main
from kbot.propose.llm import LLMSettings, ModelEndpoint, Price
from kbot.search import Budget, OptimizeOptions, StopReason, optimize

KEY_ENV = "KBOT_TEST_LLM_API_KEY"


def _script(chat, kernels, speeds=(1.0, 2.0)):
    """Seeds get a kernel at speeds[0]; prompts with an accepted parent one at speeds[1]."""
    first = kernels.GOOD + f"\n# speed={speeds[0]}\n"
    faster = kernels.GOOD.replace("1024", "2048") + f"\n# speed={speeds[1]}\n"

    def script(body, number):
        user = body["messages"][-1]["content"]
        text = first if "Write the first Triton implementation" in user else faster
        return chat.Reply(kernels.fenced(text), prompt_tokens=1000, completion_tokens=500)

    return script


def _options(server, generations=2, **budget):
    return OptimizeOptions(
        proposers=("llm",),
        device="cpu",
        islands=1,
        budget=Budget(generations=generations, **budget),
        llm=LLMSettings(
            models=(ModelEndpoint("scripted", server.base_url, KEY_ENV),),
            prices={"scripted": Price(1.0, 10.0)},  # $0.006 per request of 1000 + 500 tokens
            samples=1,
        ),
    )


def _run(tmp_path, problem, options, evaluator, **kw):
    return optimize(problem, options, tmp_path / "work", evaluator_factory=lambda *a: evaluator,
                    **kw)  # fmt: skip


def test_the_money_budget_stops_the_run_after_evaluating_what_was_paid_for(
    chat, kernels, problem, api_key, search_fakes, tmp_path
):
    with chat.ChatServer(_script(chat, kernels)) as server:
        evaluator = search_fakes.FakeEvaluator()
        result = _run(tmp_path, problem, _options(server, generations=4, max_usd=0.01), evaluator)
        requests = len(server.requests)
    assert result.stop_reason is StopReason.MONEY
    assert requests == 2 and len(evaluator.evaluated) == 2  # $0.006 + $0.006 >= $0.01
    report = json.loads(result.report_json_path.read_text())
    assert report["llm"]["run"]["usd"] == 0.012 and report["llm"]["run"]["tokens"] == 3000
    assert "$0.0120" in result.report_md_path.read_text()


def test_the_token_budget_stops_the_run(chat, kernels, problem, api_key, search_fakes, tmp_path):
    with chat.ChatServer(_script(chat, kernels)) as server:
        result = _run(tmp_path, problem, _options(server, generations=4, max_tokens=1500),
                      search_fakes.FakeEvaluator())  # fmt: skip
        assert len(server.requests) == 1
    assert result.stop_reason is StopReason.TOKENS


def test_a_resumed_run_takes_the_replies_it_paid_for_from_the_store(
    chat, kernels, problem, api_key, search_fakes, tmp_path
):
    with chat.ChatServer(_script(chat, kernels)) as server:
        first = _run(tmp_path, problem, _options(server, generations=1),
                     search_fakes.FakeEvaluator())  # fmt: skip
        assert len(server.requests) == 1
        # killed after the model replied, before the generation's proposals were recorded
        with sqlite3.connect(tmp_path / "work" / "kbot.sqlite") as db:
            db.execute("DELETE FROM run_candidates WHERE run_id = ?", (first.run_id,))
            db.execute("DELETE FROM generations WHERE run_id = ?", (first.run_id,))
        again = _run(tmp_path, problem, _options(server, generations=1),
                     search_fakes.FakeEvaluator(), resume_run_id=first.run_id)  # fmt: skip
        assert len(server.requests) == 1  # nothing paid twice
    assert again.has_winner
    usage = json.loads(again.report_json_path.read_text())["llm"]["run"]
    assert (usage["paid_calls"], usage["cached_calls"], usage["usd"]) == (1, 1, 0.006)


def test_trajectories_record_each_step_and_export_keeps_the_gaining_ones(
    chat, kernels, problem, api_key, search_fakes, tmp_path, capsys
):
    with chat.ChatServer(_script(chat, kernels)) as server:
        result = _run(tmp_path, problem, _options(server, generations=2),
                      search_fakes.FakeEvaluator(timed=True))  # fmt: skip
    (step,) = [json.loads(line) for line in (result.run_dir / "trajectories.jsonl").open()]
    assert step["proposer"] == "llm" and step["model"] == "scripted"
    assert step["mode"] in ("rewrite", "diff") and step["prompt_sha256"]
    assert step["correctness_preserving"] and step["speed_gaining"] and step["gain"] == 2.0
    assert "-    _scale_kernel[(triton.cdiv(n, 1024),)]" in step["diff"]

    out = tmp_path / "sft.jsonl"
    code = main(["trajectories", "export", "--work-dir", str(tmp_path / "work"),
                 "--out", str(out), "--json"])  # fmt: skip
    assert code == 0 and json.loads(capsys.readouterr().out)["data"]["exported"] == 1
    (example,) = [json.loads(line) for line in out.open()]
    roles = [m["role"] for m in example["messages"]]
    assert roles == ["system", "user", "assistant"] and example["metadata"]["prompt"] == "recorded"
    assert "# speed=2.0" in example["messages"][-1]["content"]
    assert example["metadata"]["gain"] == 2.0

    everything = "".join(p.read_text(errors="replace") for p in (tmp_path / "work").rglob("*")
                         if p.is_file())  # fmt: skip
    assert api_key not in everything + out.read_text()


def test_untimed_steps_are_exported_only_when_asked(
    chat, kernels, problem, api_key, search_fakes, tmp_path, capsys
):
    with chat.ChatServer(_script(chat, kernels)) as server:
        _run(tmp_path, problem, _options(server, generations=2), search_fakes.FakeEvaluator())
    work = str(tmp_path / "work")
    assert main(["trajectories", "export", "--work-dir", work, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["data"]["skipped"]["no_gain"] == 1
    assert main(["trajectories", "export", "--work-dir", work, "--include-untimed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["exported"] == 1


def test_the_other_proposers_candidates_are_evaluated_while_the_model_thinks(
    chat, kernels, problem, api_key, search_fakes, tmp_path
):
    """The model's reply waits until the evaluator has judged the fake proposer's two seeds:
    with the llm asked in line, before any evaluation, it would wait out its 20 s instead."""
    import threading

    from kbot.propose.llm import LLMProposer

    seeds_judged = threading.Event()
    waited = []

    class CountingEvaluator(search_fakes.FakeEvaluator):
        def evaluate(self, problem, candidate_source, candidate_name="candidate.py"):
            verdict = super().evaluate(problem, candidate_source, candidate_name)
            if len(self.evaluated) == 2:  # one island: two seeds a proposer
                seeds_judged.set()
            return verdict

    def script(body, number):
        waited.append(seeds_judged.wait(20))
        return chat.Reply(kernels.fenced(kernels.GOOD), prompt_tokens=1000, completion_tokens=500)

    with chat.ChatServer(script) as server:
        options = _options(server, generations=1)
        evaluator = CountingEvaluator()
        result = _run(
            tmp_path, problem, options, evaluator,
            proposer_factory=lambda names: [search_fakes.FakeProposer(seeds=3),
                                            LLMProposer(options.llm)],
        )  # fmt: skip
        requests = len(server.requests)
    assert waited == [True] and requests == 1
    assert len(evaluator.evaluated) == 3  # the model's kernel joined the same generation
    with sqlite3.connect(tmp_path / "work" / "kbot.sqlite") as db:
        rows = db.execute(
            "SELECT generation, proposer FROM run_candidates WHERE run_id = ?", (result.run_id,)
        ).fetchall()
    assert sorted(rows) == [(0, "fake"), (0, "fake"), (0, "llm")]
