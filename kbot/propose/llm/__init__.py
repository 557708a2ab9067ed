"""The `llm` proposer: an OpenAI-compatible model proposing candidates (docs/llm.md).

Importing this package does not import the `openai` SDK; the first request does.
"""

from kbot.propose.llm.proposer import LLMProposer
from kbot.propose.llm.settings import LLMSettings, ModelEndpoint, Price

__all__ = ["LLMProposer", "LLMSettings", "ModelEndpoint", "Price"]
