"""A problem whose first cases fail for want of something on the scanning machine (a package
the module imports, a CUDA GPU the reference asks for) is skipped saying what to install or
where to scan, not "give its inputs": no .kbot.yml entry could fix it (issue 14: every skip
reason is one a maintainer can act on)."""

from __future__ import annotations

import pytest
import torch

from kbot.scan import ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.model_config import load_model_config

OPS = """
import torch
from torch import nn


class LazyRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        import kbot_test_package_nobody_installed  # noqa: F401

        return x * self.weight


class DeviceRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        return (x.cuda() * self.weight.cuda()).cpu()
"""


def _emitted(tmp_path):
    root = tmp_path / "repo"
    (root / "engine").mkdir(parents=True)
    (root / "engine" / "__init__.py").write_text("")
    (root / "engine" / "norms.py").write_text(OPS)
    options = ScanOptions(cases=({"T": 1}, {"T": 3}), model_config=load_model_config("qwen3-8b"))
    result = scan(root, options)
    return {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}


def test_a_missing_package_says_to_install_the_requirements(tmp_path):
    lazy = _emitted(tmp_path)["lazy_rms_norm"]
    assert lazy.status == EmitStatus.SKIPPED
    assert lazy.message.startswith(
        "its module needs package `kbot_test_package_nobody_installed`, which is not installed "
        "here (ModuleNotFoundError: "
    )
    assert lazy.message.endswith(
        "install the repository's requirements where kbot scans, and scan again"
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU host the reference runs")
def test_a_reference_that_wants_a_gpu_says_to_scan_on_one(tmp_path):
    device = _emitted(tmp_path)["device_rms_norm"]
    assert device.status == EmitStatus.SKIPPED
    assert device.message.startswith("its reference needs a CUDA GPU to run (")
    assert device.message.endswith("); scan on a machine with one")
