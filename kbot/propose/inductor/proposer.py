"""The `inductor` proposer: torch.compile's own Triton kernels for the reference, extracted into
a standalone candidate. GPU only; it proposes once (generation 0) and then has nothing new."""

from __future__ import annotations

from kbot.propose.base import Proposal, ProposeContext, ProposeOutcome
from kbot.propose.inductor.records import Unsupported, capture_from_json

CPU_REASON = "inductor: needs a CUDA GPU (torch.compile's Triton backend); skipped on cpu"


class InductorProposer:
    name = "inductor"

    def propose(self, context: ProposeContext) -> ProposeOutcome:
        if context.device != "cuda":
            return ProposeOutcome((), skipped_reason=CPU_REASON)
        if context.parents:
            return ProposeOutcome(
                (), skipped_reason="inductor: proposes once, without parents (generation 0)"
            )
        from kbot.propose.inductor.capture import capture_problem
        from kbot.propose.inductor.extract import extract

        try:
            meta = capture_problem(context.problem.path)
            capture = capture_from_json(meta.pop("code"), meta)
            source = extract(capture, context.problem)
        except Unsupported as exc:
            return ProposeOutcome((), skipped_reason=f"inductor: {exc}")
        except Exception as exc:  # noqa: BLE001 - torch.compile failing must not end the run
            detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            return ProposeOutcome(
                (),
                skipped_reason=f"inductor: torch.compile failed ({type(exc).__name__}: {detail})",
            )
        params = {"schedule": "inductor", "case": capture.case, "mode": capture.mode}
        note = f"inductor: torch.compile's kernels ({capture.mode}), torch {capture.torch_version}"
        return ProposeOutcome(
            (Proposal(source=source, proposer=self.name, params=params, note=note),)
        )
