"""Reading a candidate out of a reply: every shape ends as a typed Parsed, never an exception."""

import pytest

from kbot.propose.llm.diff import apply_edits, find_edits
from kbot.propose.llm.parse import ParseStatus, parse_reply

CODE = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x
"""


def test_fenced_code_with_prose_around_is_taken():
    parsed = parse_reply(f"Sure! Here it is:\n\n```python\n{CODE}```\n\nThis is faster because...")
    assert parsed.ok and parsed.source == CODE and parsed.blocks == 1


def test_of_several_blocks_the_last_defining_model_new_wins():
    helper = "```python\ndef helper():\n    return 1\n```"
    first = CODE.replace("return x", "return x  # first")
    text = (
        f"{helper}\nFirst try:\n```python\n{first}```\nBetter:\n```py\n{CODE}```\n```bash\nrun\n```"
    )
    parsed = parse_reply(text)
    assert parsed.ok and parsed.source == CODE and parsed.blocks == 3


def test_a_block_that_does_not_parse_loses_to_one_that_does():
    broken = CODE.replace("return x", "return x +")
    parsed = parse_reply(f"```python\n{CODE}```\n```python\n{broken}```")
    assert parsed.ok and parsed.source == CODE


def test_unfenced_code_is_cut_out_of_the_prose():
    text = f"Here is my answer.\n\n{CODE}\nI hope this helps, it uses one kernel."
    parsed = parse_reply(text)
    assert parsed.ok and parsed.source == CODE


@pytest.mark.parametrize(
    "text, status",
    [
        ("", ParseStatus.EMPTY),
        ("   \n ", ParseStatus.EMPTY),
        ("I'm sorry, but I can't help with writing that kernel.", ParseStatus.REFUSAL),
        ("Use a bigger block size and two warps.", ParseStatus.NO_CODE),
        ("```python\ndef f():\n    return 1\n```", ParseStatus.NO_MODEL_NEW),
        (
            "```python\nclass ModelNew(nn.Module):\n    def forward(self, x)\n```",
            ParseStatus.SYNTAX,
        ),
    ],
)
def test_replies_without_a_candidate_are_typed(text, status):
    parsed = parse_reply(text)
    assert parsed.status is status and parsed.source is None and parsed.message


def test_a_reply_cut_at_the_token_limit_is_truncated():
    partial = "```python\n" + CODE[: CODE.index("def forward") + 20]  # unclosed fence
    parsed = parse_reply(partial, finish_reason="length")
    assert parsed.status is ParseStatus.TRUNCATED and "token limit" in parsed.message


def test_an_unclosed_last_fence_that_parses_is_taken():
    assert parse_reply("```python\n" + CODE).source == CODE


def test_search_replace_blocks_apply_exactly():
    reply = "<<<<<<< SEARCH\n        return x\n=======\n        return x * 1\n>>>>>>> REPLACE\n"
    parsed = parse_reply(reply, parent=CODE)
    assert parsed.ok and parsed.source == CODE.replace("return x", "return x * 1")


@pytest.mark.parametrize(
    "search, why",
    [
        ("        return y\n", "not found"),
        ("    \n", "empty SEARCH"),
        ("        return x\n", "found 2 times"),  # the parent below returns x twice
    ],
)
def test_search_replace_that_does_not_apply_exactly_is_rejected_whole(search, why):
    parent = CODE + "\n    def other(self, x):\n        return x\n"
    reply = f"<<<<<<< SEARCH\n{search}=======\nchanged\n>>>>>>> REPLACE"
    parsed = parse_reply(reply, parent=parent)
    assert parsed.status is ParseStatus.DIFF_REJECTED and why in parsed.message


def test_later_blocks_apply_to_the_result_of_earlier_ones():
    edits = find_edits(
        "<<<<<<< SEARCH\nreturn x\n=======\nreturn x + 1\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\nreturn x + 1\n=======\nreturn x + 2\n>>>>>>> REPLACE\n"
    )
    assert len(edits) == 2 and "return x + 2" in apply_edits(CODE, edits).source


def test_the_parent_coming_back_unchanged_is_no_candidate():
    assert parse_reply(f"```python\n{CODE}```", parent=CODE).status is ParseStatus.UNCHANGED
