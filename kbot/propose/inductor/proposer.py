"""The `inductor` proposer: torch.compile's own Triton kernels for the reference, extracted into
a standalone candidate. GPU only; it proposes once (in generation 1, after codegen's seeds are
measured) and then has nothing new."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from kbot.propose.base import Proposal, ProposeContext, ProposeOutcome
from kbot.propose.inductor.records import Unsupported, capture_from_json

CPU_REASON = "inductor: needs a CUDA GPU (torch.compile's Triton backend); skipped on cpu"


class CaptureFailed(Exception):
    """torch.compile failed, hung past its time limit, or wrote nothing, in the child."""


def capture_in_child(problem_path: Path, timeout_s: float) -> dict:
    """Runs the capture in `python -m kbot.propose.inductor.capture` with the evaluator's scrubbed
    environment (no tokens) in its own process group, killed whole at the time limit."""
    from kbot.evaluate.credentials import scrub_environment

    with tempfile.TemporaryDirectory(prefix="kbot-inductor-") as folder:
        out = Path(folder) / "capture.json"
        env = scrub_environment(dict(os.environ))
        package_root = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        command = [
            sys.executable,
            "-m",
            "kbot.propose.inductor.capture",
            str(Path(problem_path).resolve()),  # the child runs in its own folder
            str(out),
        ]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=folder,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise CaptureFailed(f"torch.compile did not finish within {timeout_s:.0f} s") from None
        if process.returncode != 0 or not out.is_file():
            lines = [
                line for line in output.decode("utf-8", "replace").splitlines() if line.strip()
            ]
            last = lines[-1].strip()[:200] if lines else f"exit status {process.returncode}"
            raise CaptureFailed(f"torch.compile failed ({last})")
        return json.loads(out.read_text())


class InductorProposer:
    name = "inductor"
    # Seeds in generation 1: compiling the problem first delays the first verdict (H200,
    # log_softmax_128k: first accepted at 128 s with it seeding first, 55 s without it).
    late_seed = True
    timeout_s: float = 300.0  # compiling and autotuning one problem; a default 10 min op budget

    def propose(self, context: ProposeContext) -> ProposeOutcome:
        if context.device != "cuda":
            return ProposeOutcome((), skipped_reason=CPU_REASON)
        if context.parents:
            return ProposeOutcome(
                (),
                skipped_reason="inductor: proposes once, without parents (its seeding generation)",
            )
        from kbot.propose.inductor.extract import extract

        try:
            meta = capture_in_child(context.problem.path, self.timeout_s)
            capture = capture_from_json(meta.pop("code"), meta)
            source = extract(capture, context.problem)
        except CaptureFailed as exc:
            return ProposeOutcome((), skipped_reason=f"inductor: {exc}")
        except Unsupported as exc:
            return ProposeOutcome((), skipped_reason=f"inductor: {exc}")
        params = {"schedule": "inductor", "case": capture.case, "mode": capture.mode}
        note = f"inductor: torch.compile's kernels ({capture.mode}), torch {capture.torch_version}"
        return ProposeOutcome(
            (Proposal(source=source, proposer=self.name, params=params, note=note),)
        )
