"""The `inductor` proposer: torch.compile's generated Triton as a standalone candidate."""

from kbot.propose.inductor.extract import extract
from kbot.propose.inductor.proposer import CPU_REASON, InductorProposer
from kbot.propose.inductor.records import Capture, Unsupported, capture_from_json, load_capture

__all__ = [
    "CPU_REASON",
    "Capture",
    "InductorProposer",
    "Unsupported",
    "capture_from_json",
    "extract",
    "load_capture",
]
