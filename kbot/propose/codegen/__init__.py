"""Built-in Triton codegen: trace `Model.forward`, classify it into a schedule, emit candidates.

Flow: trace.py (make_fx on meta, symbolic sizes) -> classify.py (schedule) -> lowering.py and
views.py (ATen nodes to Triton expressions at tile indices) -> emit_*.py (kernels and launch)
-> candidate.py / model_new.py (the candidate file) -> proposer.py (`CodegenProposer`).
"""

from kbot.propose.codegen.proposer import CodegenProposer, generate

__all__ = ["CodegenProposer", "generate"]
