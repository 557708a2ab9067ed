"""Which peak a timing is held against: bf16 tensor cores for bf16 matmuls, fp32 FMA for fp32
ones unless the judge allows TF32, copy bandwidth where nothing is FLOP-counted; the cache of
measured peaks (schema in the key, old or broken entries measured again, no HOME read at
import); the peak's name in the verdict JSON and the texts."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch

from kbot.evaluate import roofline
from kbot.evaluate.report import render_verdict
from kbot.evaluate.roofline import (
    Arithmetic,
    DevicePeaks,
    Work,
    bounding_peak,
    count_work,
    device_peaks,
    roofline_fraction,
)
from kbot.evaluate.verdict import CaseResult, CaseTiming, Stage, Stat, Verdict, finite_json
from kbot.search.report import case_row

# H200-like figures (bytes/s, FLOP/s)
PEAKS = DevicePeaks("gpu", 4.2e12, 4.6e12, 670e12, 380e12, 51.2e12)


@pytest.fixture
def tf32_matmuls():
    """Lets fp32 matmuls use TF32 for one test, as a problem's `allow_tf32 = True` would."""
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    yield
    torch.set_float32_matmul_precision(saved)


def _peak_of(model: torch.nn.Module, inputs: list) -> tuple[Work, str]:
    work = count_work(model, inputs)
    bytes_count = 1  # a matmul of any size is compute-bound against it
    compute = PEAKS.compute(work.arithmetic)
    return work, bounding_peak(bytes_count, work.flops, PEAKS.copy, compute).label


def test_bf16_matmul_is_held_against_bf16_tensor_cores():
    model = torch.nn.Linear(64, 32).to(torch.bfloat16)
    work, peak = _peak_of(model, [torch.randn(8, 64, dtype=torch.bfloat16)])
    assert work.flops == 2 * 8 * 64 * 32 and work.arithmetic == Arithmetic.BF16
    assert peak == "bf16 tensor core 670 TFLOP/s"


def test_fp32_matmul_without_tf32_is_held_against_fp32_fma():
    assert torch.get_float32_matmul_precision() == "highest"  # PyTorch's default
    work, peak = _peak_of(torch.nn.Linear(64, 32), [torch.randn(8, 64)])
    assert work.arithmetic == Arithmetic.FP32
    assert peak == "fp32 FMA 51.2 TFLOP/s"


def test_fp32_matmul_with_tf32_allowed_is_held_against_tf32(tf32_matmuls):
    work, peak = _peak_of(torch.nn.Linear(64, 32), [torch.randn(8, 64)])
    assert work.arithmetic == Arithmetic.TF32
    assert peak == "TF32 tensor core 380 TFLOP/s"


def test_a_reference_mixing_dtypes_is_held_against_its_slowest_arithmetic():
    class Mixed(torch.nn.Module):
        def forward(self, a, b):
            return (a.bfloat16() @ a.bfloat16().T).float().sum() + (b @ b.T).sum()

    work = count_work(Mixed(), [torch.randn(16, 16), torch.randn(16, 16)])
    assert work.arithmetic == Arithmetic.FP32


def test_a_pointwise_reference_is_bandwidth_bound():
    x = torch.randn(1024, 1024)
    work, peak = _peak_of(torch.nn.GELU(), [x])
    assert work == Work(0, None)
    assert peak == "copy 4.2 TB/s"
    bytes_count = 2 * x.numel() * x.element_size()
    seconds_at_peak = bytes_count / PEAKS.copy_bytes_per_s
    fraction = roofline_fraction(
        bytes_count, 0, 2e6 * seconds_at_peak, PEAKS.copy, PEAKS.compute(None)
    )
    assert math.isclose(fraction, 0.5)


def test_the_fp32_fraction_is_against_fma_not_tensor_cores():
    # the case: an fp32 GEMM at the FMA peak is 100% of its roofline, not 8%
    flops = 2 * 4096**3
    seconds = flops / PEAKS.fp32_flops_per_s
    fraction = roofline_fraction(
        1 << 20, flops, seconds * 1e6, PEAKS.copy, PEAKS.compute(Arithmetic.FP32)
    )
    assert math.isclose(fraction, 1.0)


# -- the cache of measured peaks


@pytest.fixture
def measured(monkeypatch):
    """Fake GPU measurements, counting the calls."""
    calls = []
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA Fake")

    def copy_bandwidth(device):
        calls.append("copy")
        return 4.2e12

    def matmul_rate(device, dtype, tf32):
        calls.append((dtype, tf32))
        return {torch.bfloat16: 670e12}.get(dtype, 380e12 if tf32 else 51.2e12)

    def read_bandwidth(device):
        calls.append("read")
        return 4.6e12

    monkeypatch.setattr(roofline, "_copy_bandwidth", copy_bandwidth)
    monkeypatch.setattr(roofline, "_read_bandwidth", read_bandwidth)
    monkeypatch.setattr(roofline, "_matmul_rate", matmul_rate)
    return calls


def test_peaks_are_measured_once_and_read_back(tmp_path, measured):
    path = tmp_path / "peaks.json"
    first = device_peaks(torch.device("cuda"), path)
    assert first == DevicePeaks("NVIDIA Fake", 4.2e12, 4.6e12, 670e12, 380e12, 51.2e12)
    assert measured == ["copy", "read", (torch.bfloat16, False), (torch.float32, True),
                        (torch.float32, False)]  # fmt: skip
    assert device_peaks(torch.device("cuda"), path) == first
    assert len(measured) == 5  # read from the cache, not measured again
    (key,) = json.loads(path.read_text())
    assert key.startswith(f"schema {roofline.CACHE_SCHEMA} | NVIDIA Fake | torch ")


@pytest.mark.parametrize(
    "entry",
    [
        {"device_name": "NVIDIA Fake", "copy_bytes_per_s": 4e12, "matmul_flops_per_s": 6e14},
        {"device_name": "NVIDIA Fake", "copy_bytes_per_s": 4e12, "bf16_flops_per_s": "fast",
         "tf32_flops_per_s": 3e14, "fp32_flops_per_s": 5e13},
        {"device_name": "NVIDIA Fake", "copy_bytes_per_s": 4e12, "bf16_flops_per_s": 6e14,
         "tf32_flops_per_s": 0.0, "fp32_flops_per_s": 5e13},
        {"device_name": "NVIDIA Fake", "copy_bytes_per_s": 4e12, "bf16_flops_per_s": 6e14,
         "tf32_flops_per_s": 3e14, "fp32_flops_per_s": 5e13},
        ["not", "an", "object"],
    ],
)  # fmt: skip
def test_old_or_malformed_entries_are_measured_again(tmp_path, measured, entry):
    path = tmp_path / "peaks.json"
    version = torch.__version__.split("+")[0]
    path.write_text(
        json.dumps(
            {
                # schema 1's key and fields: copy and bf16 only (schema 2's, without the read
                # rate, is the first entry below)
                f"NVIDIA Fake | torch {version}": {
                    "device_name": "NVIDIA Fake",
                    "copy_bytes_per_s": 4e12,
                    "matmul_flops_per_s": 6e14,
                },
                f"schema {roofline.CACHE_SCHEMA} | NVIDIA Fake | torch {version}": entry,
            }
        )
    )
    peaks = device_peaks(torch.device("cuda"), path)
    assert peaks.fp32_flops_per_s == 51.2e12 and len(measured) == 5
    assert device_peaks(torch.device("cuda"), path) == peaks and len(measured) == 5


def test_a_broken_cache_file_is_measured_again(tmp_path, measured):
    path = tmp_path / "peaks.json"
    path.write_text("{not json")
    assert device_peaks(torch.device("cuda"), path).bf16_flops_per_s == 670e12
    assert len(measured) == 5


def test_the_cache_path_honours_xdg_and_is_resolved_when_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert roofline.cache_path() == tmp_path / "xdg" / "kbot" / "device-peaks.json"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert roofline.cache_path() == tmp_path / "home" / ".cache" / "kbot" / "device-peaks.json"


def test_importing_the_roofline_reads_no_home(tmp_path):
    probe = (
        "import pathlib, torch\n"
        "def home(cls): raise AssertionError('HOME read at import')\n"
        "pathlib.Path.home = classmethod(home)\n"
        "import kbot.evaluate.roofline\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "missing"), "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


# -- the peak's name in the verdict and the reports


def _timing(**changes) -> CaseTiming:
    stat = Stat(10.0, 0.2, 200)
    fields = dict(
        candidate_graph=stat, candidate_plain=stat, eager_graph=Stat(30.0, 0.3, 200),
        eager_plain=Stat(40.0, 0.3, 200), compile_graph=None, compile_plain=None,
        compile_max_autotune_graph=None, bytes_moved=4096, flops=10**9, roofline_fraction=0.12,
        speedup_vs_eager=3.0, speedup_vs_compile=None, roofline_peak="fp32 FMA 51.2 TFLOP/s",
    )  # fmt: skip
    fields.update(changes)
    return CaseTiming(**fields)


def _verdict(timing: CaseTiming) -> Verdict:
    return Verdict(True, Stage.DONE, (), "NVIDIA H200", (CaseResult({"N": 8}, None, timing),))


def test_the_verdict_json_carries_the_peak_and_reads_it_back():
    data = json.loads(json.dumps(finite_json(_verdict(_timing()).to_json())))
    assert data["cases"][0]["timing"]["roofline_peak"] == "fp32 FMA 51.2 TFLOP/s"
    assert Verdict.from_json(data).cases[0].timing == _timing()


def test_a_verdict_written_before_the_peak_was_named_still_reads():
    data = json.loads(json.dumps(finite_json(_verdict(_timing()).to_json())))
    del data["cases"][0]["timing"]["roofline_peak"]
    back = Verdict.from_json(data).cases[0].timing
    assert back.roofline_peak == "" and back.roofline_fraction == 0.12
    assert render_verdict(Verdict.from_json(data), "p", "c").rstrip().endswith("12% of roofline")


def test_the_texts_name_the_peak():
    verdict = _verdict(_timing())
    assert "12% of roofline (fp32 FMA 51.2 TFLOP/s)" in render_verdict(verdict, "p", "c")
    row = case_row(verdict.cases[0])
    assert row["timing"]["roofline_percent"] == 12.0
    assert row["timing"]["roofline_peak"] == "fp32 FMA 51.2 TFLOP/s"
    unmeasured = _verdict(_timing(roofline_fraction=math.nan, roofline_peak=""))
    assert "roofline not measured" in render_verdict(unmeasured, "p", "c")
    assert case_row(unmeasured.cases[0])["timing"]["roofline_peak"] is None


# -- on a GPU: the measured peaks themselves


@pytest.mark.gpu
def test_measured_peaks_are_ordered_fma_tf32_bf16(tmp_path):
    peaks = device_peaks(torch.device("cuda"), tmp_path / "peaks.json")
    assert peaks.copy_bytes_per_s > 0 and peaks.read_bytes_per_s > 0
    assert 0 < peaks.fp32_flops_per_s < peaks.tf32_flops_per_s < peaks.bf16_flops_per_s
    assert torch.get_float32_matmul_precision() == "highest"  # the measurement restored it
