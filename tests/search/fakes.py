"""Fakes for the search's seams: an evaluator and a proposer that need no GPU, no worker and
no Triton. Loaded by conftest.py (fixtures) and by the SIGKILL child script, by file path."""

from __future__ import annotations

import threading
from pathlib import Path

from kbot.evaluate.verdict import (
    CaseCorrectness,
    CaseResult,
    CaseTiming,
    Reason,
    Stage,
    Stat,
    Verdict,
)
from kbot.propose.base import Proposal, ProposeContext, ProposeOutcome, source_hash

CANDIDATE = '''"""Fake candidate {tag}: scales x by 2."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x * 2.0).to(out_ptr.dtype.element_ty), mask=mask)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, {block}),)](x, out, n, BLOCK_SIZE={block}, num_warps=4)
    return out
{extra}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return scale(x)
'''


def candidate(tag: str, block: int = 1024, extra: str = "", speed: float | None = None) -> str:
    marker = f"\n# speed={speed}\n" if speed is not None else ""
    return CANDIDATE.format(tag=tag, block=block, extra=extra + marker)


class FakeProposer:
    """Seeds `seeds` candidates without parents; with parents, `per_parent` variants each.
    A source containing REJECT is rejected by FakeEvaluator; `speeds` gives timed fitness."""

    def __init__(
        self,
        seeds: int = 3,
        per_parent: int = 2,
        reject_every: int = 0,
        name: str = "fake",
        speed_base: float = 1.0,
        variants: bool = True,
    ):
        self.name = name
        self.speed_base = speed_base
        self.variants = variants
        self.seeds = seeds
        self.per_parent = per_parent
        self.reject_every = reject_every
        self.calls = 0

    def propose(self, context: ProposeContext) -> ProposeOutcome:
        self.calls += 1
        proposals = []
        if not context.parents:
            for i in range(self.seeds):
                tag = f"seed {i}" + (
                    " REJECT" if self.reject_every and i % self.reject_every == 0 else ""
                )
                source = candidate(tag, block=256 << i, speed=self.speed_base + 0.1 * i)
                proposals.append(
                    Proposal(source, self.name, (), {"schedule": f"s{i % 2}", "BLOCK": 256 << i})
                )
        elif self.variants:
            for parent in context.parents:
                for j in range(self.per_parent):
                    source = parent.source + f"\n# variant seed={context.seed} j={j}\n"
                    proposals.append(
                        Proposal(source, self.name, (parent.source_sha256,), {"variant": j})
                    )
        return ProposeOutcome(tuple(proposals[: context.max_proposals]))


class FakeClock:
    """A clock that moves only when told to: durations a test sets, whatever the machine's load."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


class FakeEvaluator:
    """Accepts every source without REJECT. CPU mode: untimed verdicts. Timed mode: speedup
    read from a `# speed=X` marker. Logs each evaluated hash to `log_path` (one per line).
    Each evaluation takes `sleep_s`: slept, or added to `clock` when one is given."""

    def __init__(
        self,
        timed: bool = False,
        sleep_s: float = 0.0,
        log_path: Path | None = None,
        clock: FakeClock | None = None,
    ):
        self.timed = timed
        self.sleep_s = sleep_s
        self.log_path = log_path
        self.clock = clock
        self.evaluated: list[str] = []
        self.remeasured: list[list[str]] = []
        self.batches: list[int] = []  # sizes of evaluate_many calls
        self.swept: list[str] = []  # names of the shape sweep's variant problems checked
        self.closed = threading.Event()  # close() ends a sleeping evaluation, as killing a worker

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def close(self):
        """What the search calls to abandon an evaluation in flight (Evaluator.close)."""
        self.closed.set()

    def evaluate(self, problem, candidate_source, candidate_name="candidate.py") -> Verdict:
        sha = source_hash(candidate_source)
        if self.log_path is not None:
            with open(self.log_path, "a") as log:
                log.write(sha + "\n")
        self.evaluated.append(sha)
        sleep_s = self.sleep_for(candidate_source)
        if self.clock is not None:
            self.clock.advance(sleep_s)
        elif sleep_s and self.closed.wait(sleep_s):
            return Verdict(False, Stage.CORRECTNESS, (Reason("crash", "worker killed"),), "cpu")
        return self._verdict(problem, candidate_source, factor=1.0)

    def sleep_for(self, source: str) -> float:
        """How long evaluating `source` takes (subclasses make some slower)."""
        return self.sleep_s

    def evaluate_many(self, problem, sources):
        self.batches.append(len(sources))
        return [self.evaluate(problem, s) for s in sources]

    def evaluate_sweep(self, problem, candidate_source, candidate_name="candidate.py", upcoming=0):
        self.swept.append(problem.path.name)
        if "SWEEP-FAILS" in candidate_source:
            reason = Reason("mismatch", "output differs from Model")
            return Verdict(False, Stage.CORRECTNESS, (reason,), "cpu")
        return self._verdict(problem, candidate_source, factor=1.0)

    def remeasure(self, problem, sources):
        self.remeasured.append([source_hash(s) for s in sources])
        # the remeasurement reverses the order of the top two, as real noise can
        return [
            self._verdict(problem, s, factor=1.5 if i == 1 else 1.0) for i, s in enumerate(sources)
        ]

    def _verdict(self, problem, source: str, factor: float) -> Verdict:
        if "REJECT" in source:
            return Verdict(
                False, Stage.CORRECTNESS, (Reason("mismatch", "output differs from Model"),), "cpu"
            )
        speed = 1.0
        for line in source.splitlines():
            if line.startswith("# speed="):
                speed = float(line.split("=", 1)[1])
        cases = []
        for case in problem.cases:
            rescued = 2 if "# float32-reference" in source else 0
            correctness = CaseCorrectness(
                case, 5, ("normal",), 0.0, 0.0, 1e-2, 1e-2, True, float32_reference_trials=rescued
            )
            timing = None
            if self.timed:
                cand = Stat(10.0 / (speed * factor), 0.1, 100)
                timing = CaseTiming(
                    candidate_graph=cand,
                    candidate_plain=cand,
                    eager_graph=Stat(30.0, 0.3, 100),
                    eager_plain=Stat(40.0, 0.3, 100),
                    compile_graph=Stat(10.0, 0.1, 100),
                    compile_plain=Stat(15.0, 0.1, 100),
                    compile_max_autotune_graph=None,
                    bytes_moved=1 << 20,
                    flops=0,
                    roofline_fraction=min(0.5 * speed * factor, 1.0),
                    speedup_vs_eager=3.0 * speed * factor,
                    speedup_vs_compile=speed * factor,
                )
            cases.append(CaseResult(case, correctness, timing))
        return Verdict(
            True, Stage.DONE, (), "NVIDIA Fake" if self.timed else "cpu", tuple(cases), seeds=5,
            versions={"torch": "x", "triton": "y"},
        )  # fmt: skip
