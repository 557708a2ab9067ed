"""The profiler bootstrap: `python -m kbot.scan.profile_child --root R --out F.json [--functions J]
(--function pkg.mod:fn | -- SCRIPT_OR_-m ARGS...)`.

Runs the user's program (as `python ...` would, via runpy) under torch.profiler with CPU and,
when there is a GPU, CUDA activities and shapes recorded. Every nn.Module whose class is
defined under R runs inside a `kbot::<file>::<qualname>` range (global forward hooks); the
functions listed in J (compiled or marked functions from the static scan) are wrapped the same
way as their modules are imported. Per range it writes exclusive time (ranges nested inside
are subtracted), calls, the distinct input signatures seen, and the instance's constructor
state. Started only by kbot.scan.profile; it runs the user's code, never kbot's own process.
"""

from __future__ import annotations

import argparse
import functools
import importlib.abc
import importlib.machinery
import inspect
import json
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

PREFIX = "kbot::"
MAX_SIGNATURES = 8


class _Recorder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ops: dict[str, dict[str, Any]] = {}
        self._files: dict[Any, str | None] = {}
        self._open: dict[int, list[Any]] = {}
        self._names: dict[type, list[str]] = {}

    def rel_file(self, obj: Any) -> str | None:
        key = obj
        if key not in self._files:
            try:
                path = Path(inspect.getsourcefile(obj) or "").resolve()
                self._files[key] = path.relative_to(self.root).as_posix()
            except (TypeError, ValueError, OSError):
                self._files[key] = None
        return self._files[key]

    def op(self, rel: str, qualname: str, what: str) -> dict[str, Any]:
        name = f"{PREFIX}{rel}::{qualname}"
        if name not in self.ops:
            self.ops[name] = {
                "file": rel,
                "qualname": qualname,
                "what": what,
                "calls": 0,
                "signatures": [],
                "init_state": {},
                "param_shapes": {},
                "param_dtypes": {},
            }
        return self.ops[name]

    def record_call(self, record: dict[str, Any], names: list[str], args: tuple) -> None:
        record["calls"] += 1
        if len(record["signatures"]) >= MAX_SIGNATURES:
            return
        signature = [_meta(name, value) for name, value in zip(names, args)]
        key = json.dumps([(m["shape"], m["dtype"]) for m in signature])
        if key not in {
            json.dumps([(m["shape"], m["dtype"]) for m in s]) for s in record["signatures"]
        }:
            record["signatures"].append(signature)

    # Module hooks ---------------------------------------------------------------------------
    def pre_hook(self, module: torch.nn.Module, args: tuple) -> None:
        cls = type(module)
        rel = self.rel_file(cls)
        if rel is None:
            return
        record = self.op(rel, cls.__qualname__, "module")
        if record["calls"] == 0:
            record["init_state"] = _scalar_state(module)
            for name, tensor in [
                *module.named_parameters(recurse=False),
                *module.named_buffers(recurse=False),
            ]:
                record["param_shapes"][name] = list(tensor.shape)
                record["param_dtypes"][name] = str(tensor.dtype).removeprefix("torch.")
        if cls not in self._names:
            self._names[cls] = _arg_names(cls)
        self.record_call(record, self._names[cls], args)
        scope = torch.profiler.record_function(f"{PREFIX}{rel}::{cls.__qualname__}")
        scope.__enter__()
        self._open.setdefault(id(module), []).append(scope)

    def post_hook(self, module: torch.nn.Module, args: tuple, output: Any) -> None:
        stack = self._open.get(id(module))
        if stack:
            stack.pop().__exit__(None, None, None)

    # Functions ------------------------------------------------------------------------------
    def wrap_function(self, fn: Any, rel: str, qualname: str) -> Any:
        record = self.op(rel, qualname, "function")
        reference = getattr(fn, "_torchdynamo_orig_callable", None) or inspect.unwrap(fn)
        try:
            names = list(inspect.signature(reference).parameters)
        except (TypeError, ValueError):
            names = []
        label = f"{PREFIX}{rel}::{qualname}"

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = list(args) + [kwargs[n] for n in names[len(args) :] if n in kwargs]
            self.record_call(record, names, tuple(bound))
            with torch.profiler.record_function(label):
                return fn(*args, **kwargs)

        return wrapper


def _arg_names(cls: type) -> list[str]:
    method = getattr(cls, "forward_native", None) or cls.forward
    try:
        return [n for n in inspect.signature(method).parameters if n != "self"]
    except (TypeError, ValueError):
        return []


def _meta(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        high = None
        if not value.is_floating_point() and not value.is_complex() and value.numel():
            high = int(value.max().item())  # integer inputs are indices: keep their range
        return {
            "name": name,
            "shape": list(value.shape),
            "dtype": str(value.dtype).removeprefix("torch."),
            "stride": list(value.stride()),
            "value": high,
        }
    scalar = value if isinstance(value, (int, float, bool, str)) or value is None else None
    return {"name": name, "shape": None, "dtype": None, "stride": None, "value": scalar}


def _scalar_state(module: torch.nn.Module) -> dict[str, Any]:
    return {
        k: v
        for k, v in vars(module).items()
        if not k.startswith("_") and (isinstance(v, (int, float, bool, str)) or v is None)
    }


class _WrappingFinder(importlib.abc.MetaPathFinder):
    """Wraps listed functions of modules under the root right after those modules execute,
    before anyone else imports names from them."""

    def __init__(self, recorder: _Recorder, functions: dict[str, list[str]]) -> None:
        self.recorder = recorder
        self.functions = functions  # rel file -> top-level function names

    def find_spec(self, fullname, path, target=None):  # noqa: D401 - importlib protocol
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or spec.loader is None:
            return None
        try:
            rel = Path(spec.origin).resolve().relative_to(self.recorder.root).as_posix()
        except ValueError:
            return None
        names = self.functions.get(rel)
        if not names:
            return None
        loader = spec.loader
        original_exec = loader.exec_module
        recorder = self.recorder

        def exec_module(module):
            original_exec(module)
            for name in names:
                fn = module.__dict__.get(name)
                if callable(fn):
                    module.__dict__[name] = recorder.wrap_function(fn, rel, name)

        loader.exec_module = exec_module
        return spec


def _exclusive_times(events: Any, use_device: bool) -> tuple[dict[str, float], float]:
    def total(event: Any) -> float:
        if use_device:
            return float(
                getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0.0)
            )
        return float(event.cpu_time_total)

    def nearest_ranges(event: Any) -> list[Any]:
        out = []
        for child in event.cpu_children:
            if child.name.startswith(PREFIX):
                out.append(child)
            else:
                out.extend(nearest_ranges(child))
        return out

    times: dict[str, float] = {}
    grand = 0.0
    for event in events:
        if (
            event.cpu_parent is None
            and getattr(event, "device_type", None) is not None
            and str(event.device_type).endswith("CPU")
        ):
            grand += total(event)
        if event.name.startswith(PREFIX):
            inner = sum(total(c) for c in nearest_ranges(event))
            times[event.name] = times.get(event.name, 0.0) + max(total(event) - inner, 0.0)
    return times, grand


def _run_target(args: argparse.Namespace) -> None:
    if args.function:
        module_name, _, attr = args.function.partition(":")
        target = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        target()
        return
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise SystemExit("kbot profile: nothing to run")
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = argv
        sys.path.insert(0, str(Path(argv[0]).resolve().parent))
        runpy.run_path(argv[0], run_name="__main__")


def _print_program_error(exc: BaseException) -> None:
    """The traceback Python would print for the program, less the frames of this module and of
    runpy that ran it (the user's frames are what the user can fix)."""
    report = traceback.TracebackException.from_exception(exc)
    pending, seen = [report], set()
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        kept = [frame for frame in item.stack if not _runner_frame(frame.filename)]
        item.stack = traceback.StackSummary.from_list(kept)
        pending += [e for e in (item.__cause__, item.__context__) if e is not None]
    sys.stderr.write("".join(report.format()))


def _runner_frame(filename: str) -> bool:
    return filename == __file__ or filename.startswith("<frozen ") or filename.endswith("runpy.py")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m kbot.scan.profile_child")
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--functions", default="{}")
    parser.add_argument("--function")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    recorder = _Recorder(root)
    sys.meta_path.insert(0, _WrappingFinder(recorder, json.loads(args.functions)))
    pre = torch.nn.modules.module.register_module_forward_pre_hook(recorder.pre_hook)
    post = torch.nn.modules.module.register_module_forward_hook(recorder.post_hook)
    use_device = torch.cuda.is_available()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if use_device:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    exit_code, error = 0, None
    with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
        try:
            _run_target(args)
        except SystemExit as exc:
            exit_code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            error = None if exit_code == 0 else f"exited with {exc.code}"
        except Exception as exc:  # the program's own error: the parent shows its stderr's end
            _print_program_error(exc)
            exit_code, error = 1, f"raised {type(exc).__name__}"
        finally:
            if use_device:
                torch.cuda.synchronize()
    pre.remove()
    post.remove()
    events = prof.events()
    times, grand = _exclusive_times(events, use_device)
    if use_device and grand <= 0.0:
        use_device = False  # a GPU host running a CPU-only program: fall back to CPU time
        times, grand = _exclusive_times(events, False)
    ops = []
    for name, record in recorder.ops.items():
        record["self_us"] = times.get(name, 0.0)
        ops.append(record)
    result = {
        "time_kind": "device" if use_device else "cpu",
        "total_us": grand,
        "exit_code": exit_code,
        "error": error,
        "ops": ops,
    }
    args.out.write_text(json.dumps(result))
    return 0 if exit_code == 0 else 3


if __name__ == "__main__":
    sys.exit(main())
