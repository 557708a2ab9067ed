"""Inputs inferred from --model-config for the argument kinds real repositories use beyond
tensors sized by the hidden width (found by bench/real_repos.py): each is accepted only where
the reference runs on it, and says where its value came from."""

from __future__ import annotations

from kbot.problem.runtime import case_inputs, import_file, init_inputs
from kbot.scan import ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.model_config import load_model_config

CASES = ({"T": 1}, {"T": 3})


def _emit(tree, tmp_path, preset="llama-3-8b"):
    options = ScanOptions(cases=CASES, model_config=load_model_config(preset))
    result = scan(tree, options)
    return {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}


def _run(problem, case):
    module = import_file(problem.path)
    return module.Model(*init_inputs(module))(*case_inputs(module, case))


def test_a_token_count_argument_follows_each_cases_T(tmp_path):
    # Vision rotaries build their angle table for `seqlen` positions: a number, not a tensor.
    tree = tmp_path / "vision"
    tree.mkdir()
    (tree / "rotary.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass PatchRotaryEmbedding(nn.Module):\n"
        "    def __init__(self, dim: int, theta: float = 10000.0) -> None:\n"
        "        super().__init__()\n"
        "        exponents = torch.arange(0, dim, 2, dtype=torch.float32) / dim\n"
        "        self.register_buffer('inv_freq', theta ** -exponents, persistent=False)\n\n"
        "    def forward(self, seqlen: int) -> torch.Tensor:\n"
        "        steps = torch.arange(seqlen, dtype=self.inv_freq.dtype)\n"
        "        return steps[:, None] * self.inv_freq[None, :]\n"
    )
    (rotary,) = _emit(tree, tmp_path).values()
    assert rotary.status == EmitStatus.EMITTED, rotary.message
    assert "seqlen=T (a token count: the case's T)" in rotary.inputs_from
    assert "dim=128 (head_dim for `dim`)" in rotary.inputs_from
    source = rotary.path.read_text()
    assert "def get_inputs(T=1):\n    seqlen = T\n    return [seqlen]" in source
    assert "def forward(self, seqlen):" in source
    assert tuple(_run(rotary, {"T": 3}).shape) == (3, 64)  # one row per position
