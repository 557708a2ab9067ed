"""The kernel call the PR writes into the target's method reads the target's own attributes:
a call reading something only the candidate's ModelNew made (launch arguments prebuilt in its
constructor, the weight kept in a submodule of its own) is refused before any file is written,
since the patched op would raise AttributeError (red-team round fourteen, c03 and c13)."""

from __future__ import annotations

import pytest

from kbot.publish.adapters.source import AdapterError
from kbot.publish.artifacts import build_publication
from kbot.publish.rundir import load_run_dir

BASE_SHA = "0123456789abcdef0123456789abcdef01234567"

_PREBUILT = """
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self._launch = (self.weight, eps)

    def forward(self, x):
        return rmsnorm(x, *self._launch)
"""

_SUBMODULE = """
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.variance_epsilon = eps
        self.norm = nn.Module()
        self.norm.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        return rmsnorm(x, self.norm.weight, self.variance_epsilon)
"""


def _with_model_new(run_dir, body: str) -> None:
    path = run_dir / "best_candidate.py"
    source = path.read_text(encoding="utf-8")
    head = source[: source.index("class ModelNew(nn.Module):")]
    path.write_text(head + "class ModelNew(nn.Module):" + body, encoding="utf-8")


@pytest.mark.parametrize(("body", "name"), [(_PREBUILT, "_launch"), (_SUBMODULE, "norm")])
def test_a_call_reading_what_only_model_new_made_is_refused(make_run, target_repo, body, name):
    run_dir = make_run("fused_op")
    _with_model_new(run_dir, body)
    with pytest.raises(
        AdapterError, match=rf"reads self\.{name}, which FusedRMSNorm does not have"
    ):
        build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",))


def test_a_call_reading_the_targets_own_attributes_is_published(make_run, target_repo):
    run_dir = make_run("fused_op")
    publication = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",))
    patched = "".join(f.content for f in publication.files if "fused_norm" in f.path)
    assert "self.weight, self.variance_epsilon" in patched
