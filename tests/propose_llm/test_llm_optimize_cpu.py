"""`kbot optimize --proposers llm` end to end on a CPU: the real evaluator under the Triton
interpreter, the real openai client over HTTP to the scripted server. The model's first
kernel is wrong; the loop offers it back with the evaluator's reasons, and the repair is
accepted. The key reaches the server's Authorization header and nothing else."""

import json
import os
import sqlite3
import subprocess
import sys

KEY_ENV = "KBOT_TEST_LLM_API_KEY"
KEY = "sk-test-e2e-never-written-anywhere-42"


def test_a_failing_candidate_is_repaired_into_an_accepted_one(chat, kernels, problem, tmp_path):
    def script(body, number):
        user = body["messages"][-1]["content"]
        if "Repair it" in user and "rejected at correctness" in user:
            return chat.Reply(
                kernels.fenced(kernels.GOOD), prompt_tokens=2000, completion_tokens=400
            )
        if "Write the first Triton implementation" in user:
            return chat.Reply(
                kernels.fenced(kernels.WRONG), prompt_tokens=1500, completion_tokens=400
            )
        return chat.Reply("I'm sorry, I can't help with that.")

    work = tmp_path / "work"
    env = {**os.environ, KEY_ENV: KEY}
    with chat.ChatServer(script) as server:
        run = subprocess.run(
            [sys.executable, "-m", "kbot", "optimize", str(problem.path), "--device", "cpu",
             "--proposers", "llm", "--llm-base-url", server.base_url, "--llm-model", "scripted",
             "--llm-api-key-env", KEY_ENV, "--generations", "2", "--islands", "1",
             "--max-candidates", "4", "--work-dir", str(work), "--json"],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        seen = list(server.requests)
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads(run.stdout)["data"]
    assert data["status"] == "not_timed" and data["fresh_evaluations"] == 2
    run_dir = work / "runs" / data["run_id"]
    assert (run_dir / "best_candidate.py").read_text() == kernels.GOOD

    report = json.loads((run_dir / "report.json").read_text())
    assert [step["proposer"] for step in report["lineage"]] == ["llm", "llm"]
    assert report["rejections"][0]["reason"].startswith("correctness")
    assert report["llm"]["run"]["paid_calls"] == len(seen) == 4  # 2 seed + 2 repair requests
    (step,) = [json.loads(line) for line in (run_dir / "trajectories.jsonl").open()]
    assert step["mode"] == "repair" and not step["parent"]["accepted"] and step["child"]["accepted"]
    assert not step["correctness_preserving"]

    # the key: in the Authorization header, nowhere else
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in seen)
    assert not any(KEY in json.dumps(r.body) for r in seen)
    written = [p.read_bytes() for p in work.rglob("*") if p.is_file()]
    assert not any(KEY.encode() in blob for blob in written)
    assert KEY not in run.stdout + run.stderr
    repair = next(r for r in seen if "Repair it" in r.text)
    assert "x * 3.0" in repair.text and "[mismatch] case {'N': 64}" in repair.text  # and why
    with sqlite3.connect(work / "kbot.sqlite") as db:
        assert not any(KEY in str(row) for row in db.execute("SELECT * FROM llm_replies"))
