"""Publish an optimized op as a dry-run PR, then run the PR's parity test and benchmark script
on this machine's GPU, inside kbot's clone of the target repository.

    python bench/publish_gpu.py                       # tinyserve's RMSNorm, kbot's fixture kernel
    python bench/publish_gpu.py --repo PATH --run-dir RUN_DIR [--out bench/results/publish.md]
        [--bare-package NAME]

Prints and writes (markdown): the op, the adapter, the diff size, the parity test's result and
the benchmark table (µs under CUDA-graph replay). Nothing is pushed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KBOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KBOT))

from kbot.publish.publisher import PublishSettings, publish_run  # noqa: E402

FIXTURE_RUN = KBOT / "tests" / "publish" / "fixtures" / "runs" / "rmsnorm_layer"
TINYSERVE_RMSNORM = {
    "file": "tinyserve/layers/norm.py",
    "line": 12,
    "qualname": "RMSNorm",
    "kind": "custom_op",
    "entry": "forward_native",
}


def _demo_tinyserve(dest: Path) -> Path:
    maker = KBOT / "examples" / "tinyserve" / "make_demo_repo.py"
    spec = importlib.util.spec_from_file_location("make_demo_repo", maker)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_demo_repo(dest)


def _bare_package_site(scratch: Path, clone: Path, package: str) -> Path:
    """A folder whose sitecustomize.py registers `package` as a bare namespace over the clone's
    folder, so its subpackages import without its top-level __init__.py (LMDeploy's pulls in the
    whole serving stack, whose compiled dependencies the GPU image lacks)."""
    site = scratch / "bare-site"
    site.mkdir(exist_ok=True)
    folder = clone / package.replace(".", "/")
    (site / "sitecustomize.py").write_text(
        "import sys, types\n"
        f"_m = types.ModuleType({package!r})\n"
        f"_m.__path__ = [{str(folder)!r}]\n"
        f"sys.modules[{package!r}] = _m\n"
    )
    return site


def _run(cmd: list[str], cwd: Path, site: Path | None = None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    # The target's package imports from its checkout, as after `pip install -e .` there (on the
    # H200, 2026-11-30, the benchmark script failed with "No module named 'tinyserve'" without it).
    paths = (str(site) if site else "", str(cwd), env.get("PYTHONPATH", ""))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800)
    return done.returncode, (done.stdout + done.stderr).strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repo",
        type=Path,
        help="scanned folder of a git checkout (default: a tinyserve demo repo)",
    )
    parser.add_argument(
        "--run-dir", type=Path, help="an optimize run directory (default: kbot's RMSNorm fixture)"
    )
    parser.add_argument("--out", type=Path, default=KBOT / "bench" / "results" / "publish.md")
    parser.add_argument(
        "--bare-package",
        help="import this package of the target without its __init__.py (e.g. lmdeploy)",
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="kbot-publish-gpu-"))
    repo = args.repo or _demo_tinyserve(scratch / "tinyserve")
    run_dir = args.run_dir
    if run_dir is None:
        run_dir = scratch / "run"
        shutil.copytree(FIXTURE_RUN, run_dir)
        (run_dir / "target.json").write_text(json.dumps(TINYSERVE_RMSNORM))
    outcome = publish_run(
        run_dir, repo, scratch / "work", PublishSettings(), push=False, environ={}
    )
    clone = outcome.clone_dir
    _, stat = _run(["git", "diff", "--shortstat", f"{outcome.base_sha}..HEAD"], clone)
    _, integration_stat = _run(
        ["git", "diff", "--stat", f"{outcome.base_sha}..HEAD", "--", *outcome.files[1:-2]], clone
    )
    _, integration_diff = _run(
        # -U0: kbot's own lines only; the target's surrounding code stays out of the report.
        ["git", "diff", "-U0", f"{outcome.base_sha}..HEAD", "--", *outcome.files[1:-2]],
        clone,
    )
    site = _bare_package_site(scratch, clone, args.bare_package) if args.bare_package else None
    parity, bench = outcome.files[-2], outcome.files[-1]
    parity_rc, parity_out = _run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", ".", parity],
        clone,
        site,
    )
    bench_rc, bench_out = _run([sys.executable, bench], clone, site)
    import torch
    import triton

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    report = "\n".join(
        [
            f"# kbot publish on {gpu}",
            "",
            f"- op `{outcome.op}` ({outcome.target}), adapter `{outcome.adapter}`, branch `{outcome.branch}`",
            f"- diff: {stat}",
            f"- torch {torch.__version__}, Triton {triton.__version__}, Python {platform.python_version()}",
            "",
            "## Integration diff",
            "",
            "```",
            integration_stat,
            "```",
            "",
            "```diff",
            integration_diff[-8000:],
            "```",
            "",
            f"## Parity test (`pytest {parity}`), exit code {parity_rc}",
            "",
            "```",
            parity_out[-3000:],
            "```",
            "",
            f"## Benchmark (`python {bench}`), exit code {bench_rc}",
            "",
            bench_out[-6000:],
            "",
        ]
    )
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report + "\n", encoding="utf-8")
    return 0 if parity_rc == 0 and bench_rc == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
