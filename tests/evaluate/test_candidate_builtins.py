"""The builtins a candidate's module runs with (audit.candidate_builtins): its own `import`
statements name the static rules' modules only, loaded or not; each refusal is recorded for
the judge's `sandbox` rule."""

import math

import pytest

from kbot.evaluate.audit import Policy, candidate_builtins


def _policy() -> Policy:
    return Policy(readable=(), writable=(), programs=(), imports=frozenset())


def _run(source: str, policy: Policy) -> dict:
    scope = {"__builtins__": candidate_builtins(policy)}
    exec(compile(source, "<candidate>", "exec"), scope)
    return scope


def test_the_allowed_modules_import_as_usual():
    scope = _run("import math\nfrom torch import nn\nimport triton.language as tl", _policy())
    assert scope["math"] is math and scope["nn"].Module and scope["tl"].constexpr


@pytest.mark.parametrize("source", ["import gc", "import codecs", "from os import environ"])
def test_a_loaded_module_outside_the_allowlist_is_refused_and_recorded(source):
    policy = _policy()
    with pytest.raises(PermissionError, match="sandbox refused"):
        _run(source, policy)
    assert len(policy.refused) == 1 and "in the candidate's code" in policy.refused[0]


def test_a_str_subclass_cannot_name_one_module_and_import_another():
    policy = _policy()
    source = (
        "class Name(str):\n"
        "    def __str__(self):\n"
        "        return 'torch'\n"
        "    def split(self, sep=None):\n"
        "        return ['torch']\n"
        "__import__(Name('gc'))\n"
    )
    with pytest.raises(PermissionError):
        _run(source, policy)


def test_a_relative_import_is_refused():
    with pytest.raises(PermissionError):
        _run("from . import helper", _policy())
