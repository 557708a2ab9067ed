"""The sandbox: hangs and crashes cost one candidate, never the judge or the parent; secrets
never reach the candidate; what a candidate patches in its own process changes no other verdict."""

import os

import pytest

from kbot.evaluate import EvalOptions, Evaluator, Stage
from kbot.evaluate.credentials import scrub_environment
from kbot.evaluate.protocol import CandidateJob, Job
from kbot.evaluate.sandbox import WorkerProcess


@pytest.fixture(scope="module")
def short_evaluator():
    with Evaluator(EvalOptions(device="cpu", timeout_s=15.0)) as evaluator:
        yield evaluator


def test_hang_times_out_and_the_next_candidate_still_evaluates(short_evaluator, problem, candidate):
    spec = problem("gelu_fp32")
    hung = short_evaluator.evaluate(spec, candidate("hang_forever"))
    assert not hung.accepted
    assert [r.rule for r in hung.reasons] == ["timeout"]
    assert "killed" in hung.reasons[0].message
    after = short_evaluator.evaluate(spec, candidate("quick_gelu"))
    assert after.accepted, [str(r) for r in after.reasons]


def test_segfaulting_kernel_costs_its_own_process_only(short_evaluator, problem, candidate):
    spec = problem("gelu_fp32")
    short_evaluator.evaluate(spec, candidate("quick_gelu"))  # the judge is up
    spawned = short_evaluator.workers_spawned
    crashed = short_evaluator.evaluate(spec, candidate("crash_wild_pointer"))
    assert not crashed.accepted
    assert crashed.reasons[0].rule in ("crash", "forward-error"), [str(r) for r in crashed.reasons]
    after = short_evaluator.evaluate(spec, candidate("quick_gelu"))
    assert after.accepted
    assert short_evaluator.workers_spawned == spawned  # the judge itself never went down


def _job(problem, source, name="candidate.py"):
    return Job(
        kind="evaluate",
        problem_path=str(problem.path.resolve()),
        problem_sha256=problem.source_sha256,
        cases=problem.cases,
        candidates=(CandidateJob(name, source),),
        candidate_timeout_s=60.0,
        base_seed=1234,
    )


@pytest.fixture(scope="module")
def raw_worker():
    # Below the static rules on purpose: these candidates would never get past them.
    worker = WorkerProcess(device="cpu")
    yield worker
    worker.close()


def _outcome(reply) -> dict:
    assert reply.result is not None, reply.message
    return reply.result["outcomes"][0]


def test_abort_is_reported_as_a_crash_with_the_signal(raw_worker, problem, candidate):
    spec = problem("gelu_fp32")
    crashed = _outcome(raw_worker.run(_job(spec, candidate("crash_abort"))))
    assert not crashed["accepted"]
    assert crashed["reasons"][0]["rule"] == "crash"
    assert "SIGABRT" in crashed["reasons"][0]["message"]
    assert _outcome(raw_worker.run(_job(spec, candidate("quick_gelu"))))["accepted"]


def test_secrets_are_scrubbed_from_the_candidate_environment(raw_worker, problem, monkeypatch):
    monkeypatch.setenv("KBOT_TEST_API_TOKEN", "do-not-leak")
    monkeypatch.setenv("GITHUB_REPOSITORY", "owner/repo")
    raw_worker.kill()  # the next job starts a worker with this environment
    spy = (  # os through torch: `import os` in a candidate's code is refused first
        "import torch\n"
        "os = torch.serialization.os\n"
        "print('token:', os.environ.get('KBOT_TEST_API_TOKEN'), os.environ.get('GITHUB_REPOSITORY'))\n"
        "print('visible:', 'PATH' in os.environ)\n"
    )
    reply = raw_worker.run(_job(problem("gelu_fp32"), spy))
    printed = _outcome(reply)["output"]
    assert "token: None None" in printed
    assert "visible: True" in printed
    assert "do-not-leak" not in printed + reply.output


def test_scrub_environment_drops_credentials_and_keeps_the_rest():
    env = {
        "PATH": "/bin",
        "HOME": "/home/x",
        "OPENAI_API_KEY": "k",
        "GITHUB_TOKEN": "t",
        "GH_ENTERPRISE_HOST": "h",
        "AWS_SECRET_ACCESS_KEY": "s",
        "MY_PASSWORD": "p",
        "HF_TOKEN": "h",
        "ACTIONS_RUNTIME_TOKEN": "a",
        "CUDA_VISIBLE_DEVICES": "0",
        "TRITON_INTERPRET": "1",
    }
    assert scrub_environment(env) == {
        "PATH": "/bin",
        "HOME": "/home/x",
        "CUDA_VISIBLE_DEVICES": "0",
        "TRITON_INTERPRET": "1",
    }


def test_candidate_output_is_captured_not_mixed_into_the_protocol(raw_worker, problem, candidate):
    noisy = candidate("quick_gelu").replace(
        "def quick_gelu(x):\n", 'def quick_gelu(x):\n    print(\'{"event": "result"}\')\n'
    )
    outcome = _outcome(raw_worker.run(_job(problem("gelu_fp32"), noisy)))
    assert outcome["accepted"]
    assert '{"event": "result"}' in outcome["output"]


def test_what_a_candidate_patches_in_its_process_changes_no_later_verdict(
    raw_worker, problem, candidate
):
    # Patches of the comparison's building blocks: harmless where the comparison runs elsewhere.
    patcher = candidate("quick_gelu") + (
        "\n\ntorch.Tensor.sum = lambda self, *a, **k: 0\n"
        "torch.equal = lambda *a, **k: True\n"
        "torch.allclose = lambda *a, **k: True\n"
    )
    raw_worker.run(_job(problem("gelu_fp32"), patcher))
    wrong = candidate("quick_gelu").replace("1.702", "1.5")
    assert wrong != candidate("quick_gelu")
    outcome = _outcome(raw_worker.run(_job(problem("gelu_fp32"), wrong)))
    assert not outcome["accepted"]
    assert outcome["reasons"][0]["rule"] == "mismatch"
    assert raw_worker.alive


def test_problem_that_fails_is_bad_input(evaluator, tmp_path, candidate):
    from kbot.problem import load_problem

    path = tmp_path / "broken.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return x.no_such_method()\n\n"
        "def get_inputs():\n    return [torch.randn(4, 4)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    verdict = evaluator.evaluate(load_problem(path), candidate("quick_gelu"))
    assert verdict.stage == Stage.INPUT and verdict.reasons[0].rule == "problem"


def test_worker_is_started_as_a_module_in_its_own_session(raw_worker):
    raw_worker.start()
    pid = raw_worker._process.pid
    assert os.getpgid(pid) == pid
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        assert b"kbot.evaluate.worker" in f.read()


def test_a_reply_larger_than_what_was_due_is_refused_unread(raw_worker, problem):
    # 100 MB of "output" for a 6 x 50 problem: the judge must not read what it never asked for.
    flood = (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.zeros(100_000_000, dtype=torch.uint8)\n"
    )
    outcome = _outcome(raw_worker.run(_job(problem("gelu_fp32"), flood)))
    assert not outcome["accepted"]
    assert outcome["reasons"][0]["rule"] == "protocol"
    assert "were due" in outcome["reasons"][0]["message"]


def test_a_judge_that_hangs_on_the_reference_is_the_evaluators_failure(tmp_path, candidate):
    from kbot.problem import load_problem

    path = tmp_path / "slow_reference.py"
    path.write_text(
        "import time\nimport torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        time.sleep(60)\n"
        "        return x\n\n"
        "def get_inputs():\n    return [torch.randn(6, 50)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    with Evaluator(EvalOptions(device="cpu", timeout_s=5.0)) as short:
        verdict = short.evaluate(load_problem(path), candidate("quick_gelu"))
    assert not verdict.accepted
    assert [r.rule for r in verdict.reasons] == ["evaluator-error"]
    assert "timed out" in verdict.reasons[0].message


def _candidate_processes(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    cmdline = handle.read().decode(errors="replace")
            except OSError:
                continue
            if "kbot.evaluate.candidate_host" in cmdline and marker in cmdline:
                found.append(int(entry))
    return found


def test_a_killed_judge_takes_its_candidates_with_it(problem, candidate):
    import glob
    import shutil
    import threading
    import time

    if shutil.which("setpriv") is None:
        pytest.skip("util-linux's setpriv is not installed")
    worker = WorkerProcess(device="cpu")
    job = _job(problem("gelu_fp32"), candidate("hang_forever"))
    thread = threading.Thread(target=worker.run, args=(job,), daemon=True)
    thread.start()
    marker = str(worker._folder)
    # A call's payload lies in the candidate's folder while forward runs (here: forever).
    in_forward = f"{marker}/jobs-*/candidate-*/exchange/request-*.bin"
    deadline = time.monotonic() + 120
    while not glob.glob(in_forward) and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(1.0)
    assert _candidate_processes(marker), "the hanging candidate is not running"
    worker.kill()
    deadline = time.monotonic() + 20
    while _candidate_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _candidate_processes(marker)
    worker.close()


def test_abort_kills_a_busy_judge_at_once(tmp_path, candidate):
    """An evaluation given up at a budget's end: the judge is busy (here in a reference that
    sleeps) and cannot read a polite shutdown, so abort() kills it without waiting, and the
    call in flight returns the evaluator's failure at once."""
    import threading
    import time

    from kbot.problem import load_problem

    busy = tmp_path / "the-judge-is-in-the-reference"
    path = tmp_path / "slow_reference.py"
    path.write_text(
        "import time\nimport torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n    def forward(self, x):\n"
        f"        open({str(busy)!r}, 'w').close()\n        time.sleep(120)\n"
        "        return x\n\n"
        "def get_inputs():\n    return [torch.randn(6, 50)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    evaluator = Evaluator(EvalOptions(device="cpu", timeout_s=300.0))
    verdicts = []
    call = threading.Thread(
        target=lambda: verdicts.append(
            evaluator.evaluate(load_problem(path), candidate("quick_gelu"))
        )
    )
    call.start()
    deadline = time.monotonic() + 180  # a GPU host's judge takes longer to start
    while not busy.exists():
        assert time.monotonic() < deadline, "the judge never reached the reference"
        time.sleep(0.1)
    started = time.monotonic()
    evaluator.abort()
    call.join(timeout=10)
    took = time.monotonic() - started
    assert not call.is_alive() and took < 3.0, took  # close() alone waits 5 s first
    assert not verdicts[0].accepted
    assert verdicts[0].reasons[0].rule == "evaluator-error", [str(r) for r in verdicts[0].reasons]


def test_a_read_under_way_gives_up_when_another_thread_kills_the_worker():
    """A worker still starting (the handshake not yet read) or busy: kill() from another thread
    (Evaluator.abort) ends the read within READ_POLL_S, not at its deadline minutes later."""
    import subprocess
    import sys
    import threading
    import time

    from kbot.evaluate.sandbox import READ_POLL_S

    worker = WorkerProcess(device="cpu")
    worker._process = subprocess.Popen(  # says nothing, like a worker importing torch
        [sys.executable, "-c", "import time; time.sleep(120)"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    got = []
    reader = threading.Thread(target=lambda: got.append(worker._read(time.monotonic() + 120)))
    reader.start()
    time.sleep(0.5)
    started = time.monotonic()
    worker.kill()
    reader.join(timeout=10)
    assert not reader.is_alive() and time.monotonic() - started < 2 + READ_POLL_S
    assert got == [None] and worker._eof  # read as the worker's end, not as a timeout
    worker.close()
