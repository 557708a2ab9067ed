"""What a candidate's process does for the judge, one request at a time (see candidate_host).

Requests and replies are JSON; tensors travel as payload files in the process's own folder
(kbot.evaluate.wire). The inputs sit where kbot.evaluate.input_places puts them: one set of
buffers per case, refilled each call (so a candidate caching by pointer answers the previous
trial), or, when the judge asks, at an address shifted off the allocator's alignment. On a GPU it captures the timed CUDA graph, samples it and plain calls,
replays it for the judge's clock, and refills the graph's inputs for the judge's recheck.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import torch

from kbot.evaluate import autotune_turns, wire
from kbot.evaluate.aliasing import Allowed, state_tensors
from kbot.evaluate.aliasing import refusal as aliasing_refusal
from kbot.evaluate.audit import Policy, candidate_builtins
from kbot.evaluate.autotune_turns import in_turn
from kbot.evaluate.call_modes import GRAD_MODES, frozen, in_mode
from kbot.evaluate.compute_guard import ComputeGuard, extern_aten, guarding
from kbot.evaluate.cuda_errors import is_sticky
from kbot.evaluate.input_places import InputPlaces, PlacementError, checked_shift, refill
from kbot.evaluate.instances import Refused, build_judged, shared_state
from kbot.evaluate.launch_hooks import record_kernels
from kbot.evaluate.library_state import library_baseline, library_change
from kbot.evaluate.object_tables import StateTypeError
from kbot.evaluate.poison import crowded_out, poison
from kbot.evaluate.processes import short
from kbot.evaluate.state_check import audit_classes, first_change, snapshot
from kbot.evaluate.state_loading import LoadRefused, load_state
from kbot.evaluate.step_clock import StepClock
from kbot.evaluate.tail_canaries import judge_generator
from kbot.problem.runtime import import_file


class Session:
    def __init__(self, device: torch.device, folder: Path, policy: Policy) -> None:
        self.device = device
        self.folder = folder
        self.policy = policy
        self.model: torch.nn.Module | None = None
        self.extern: frozenset[str] = frozenset()  # aten ops of the declared extern ops
        self.module: Any = None  # the candidate's module
        self.state: dict[str, object] = {}  # what ModelNew and its module keep, as loaded
        self.rng = judge_generator(device)  # the poison's and the canaries' random bytes
        self.places = InputPlaces(device, self.rng)  # the inputs of each call
        self.timed = None  # kbot.evaluate.timing.Implementation of the case being timed
        self.timed_case: int | None = None
        self.timed_copies: list[list] = []  # the timed graph's inputs, one list per call
        self._flush: torch.Tensor | None = None
        self._jitter = None  # what changes the timed inputs before each replay (_capture)
        self._replies = itertools.count()
        self.library = library_baseline()  # before any candidate code

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = str(request.get("op"))
        handlers = {
            "load": self._load,
            "call": self._call,
            "capture": self._capture,
            "sample": self._sample,
            "replay": self._replay,
            "recheck": self._recheck,
            "release": self._release,
            "turns": lambda request: {"unrun": autotune_turns.unrun(str(request.get("kind", "")))},
            "ping": lambda request: {},
        }
        if op not in handlers:
            return {"ok": False, "rule": "protocol", "message": f"unknown request {op!r}"}
        try:
            return {"ok": True, **handlers[op](request)}
        except Refused as refused:
            return {"ok": False, "rule": refused.rule, "message": refused.message}
        except PlacementError as refused:
            return {"ok": False, "rule": "protocol", "message": str(refused)}
        except BaseException as exc:  # the candidate's own code raised: that is its verdict
            crowded = crowded_out(exc, self.device)
            # unless the card's memory went to the judge's processes (and the candidate left the
            # libraries as they were: kbot.evaluate.poison binds torch.cuda's queries at start)
            if crowded is not None and library_change(self.library) is None:
                return {"ok": False, "rule": "evaluator-error", "message": crowded}
            rule = {"load": "load", "capture": "cuda-graph"}.get(op, "forward-error")
            return {"ok": False, "rule": rule, "message": short(exc), "fatal": is_sticky(str(exc))}

    # --- requests ------------------------------------------------------------------------

    def _load(self, request: dict[str, Any]) -> dict[str, Any]:
        payload = self._payload(request)
        init = wire.decode(request["init"], payload, torch.device("cpu"))
        state = wire.decode(request["state"], payload, self.device)
        try:
            module = import_file(
                self._inside(request["source"]),
                prefix="kbot_candidate",
                builtins=candidate_builtins(self.policy),
            )
        except BaseException as exc:
            raise Refused("load", f"importing the candidate raised {short(exc)}") from None
        record_kernels(module)  # before ModelNew's __init__ runs any of the candidate's code
        model_new = getattr(module, "ModelNew", None)
        if not isinstance(model_new, type) or not issubclass(model_new, torch.nn.Module):
            raise Refused("model-new", "ModelNew is not an nn.Module subclass")
        model = build_judged(self.device, model_new, init, module)
        try:
            # Before the judge calls anything on ModelNew (`to`, `eval`, `state_dict`): no class
            # of the candidate's may answer those calls with code of its own.
            audit_classes(model, module)
        except StateTypeError as exc:
            raise Refused("model-new", str(exc)) from None
        patched = library_change(self.library)
        if patched is not None:
            raise Refused(
                "module-patching",
                f"`{patched}` was changed by the candidate's import or constructor; a "
                "candidate leaves the libraries as they are",
            )
        # Moved and switched to eval before Model's values arrive, so nothing that runs there
        # sees the weights.
        model = model.to(self.device).eval()
        persistent = frozenset(request.get("persistent") or ())
        # Sharing is looked for in the constructor's tensors too: loading puts new tensor
        # objects in ModelNew's places (state_loading), which a registry would not hold, while
        # a loader copying in place (vLLM's weight loaders) would fill the shared one.
        shared = shared_state(model, module, persistent)
        try:
            load_state(model, state, adopt=bool(request.get("adopt")))
        except LoadRefused as exc:
            raise Refused("load", str(exc)) from None
        self.model = model
        self.extern = extern_aten(list(request.get("extern_ops") or ()))
        # What ModelNew and its module keep, as loaded (tensors byte for byte, Python values,
        # closures): a call may not change any of it (a counter the kernel bumps would let it
        # answer right for the judge's calls and wrong after them).
        self.module = module
        try:
            self.state = snapshot(model, module)
        except StateTypeError as exc:
            raise Refused("model-new", str(exc)) from None
        shared = shared or shared_state(model, module, persistent)
        if shared is not None:
            raise Refused(
                "model-new",
                f"`{shared[0]}` is also held by `{shared[1]}`, outside this ModelNew: every "
                "instance would share it (a model of many layers would load all their weights "
                "into one tensor); give each instance its own",
            )
        return {}

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.model is None:
            raise Refused("protocol", "call before load")
        clock = StepClock(self.device)
        case, shift = int(request["case"]), checked_shift(request.get("shift", 0))
        fresh = wire.decode(request["inputs"], self._payload(request), self.device)
        clock.mark("inputs in")
        buffers, canaries = self.places.place(case, fresh, shift)
        del fresh  # copied into place: a multi-GB input is not held twice through the call
        clock.mark("placing")
        poison([int(n) for n in request.get("poison_bytes", [])], self.device, self.rng)
        clock.mark("poison")
        limit, fused = request.get("extern_calls"), request.get("fused_adds")
        scaled, flops = request.get("scaled_calls"), request.get("extern_flops")
        guard = ComputeGuard(
            self.extern,
            None if limit is None else int(limit),
            None if fused is None else int(fused),
            None if scaled is None else int(scaled),
            None if flops is None else int(flops),
            canaries,
        )
        # Fresh tensor objects over the same memory each call: state kept on the objects
        # forward receives (a `.grad`, a Python attribute) dies with them, while a cache keyed
        # by pointer still meets the refilled values.
        aliases = [b.detach() if isinstance(b, torch.Tensor) else b for b in buffers]
        shared = _shared_pair(request.get("shared"), aliases)
        if shared is not None:  # one tensor passed as two arguments (kbot.evaluate.shared_inputs)
            aliases[shared[0]] = aliases[shared[1]]
        grad_mode = GRAD_MODES.get(str(request.get("grad_mode", "no_grad")))
        if grad_mode is None:
            raise Refused("protocol", f"unknown grad mode {request.get('grad_mode')!r}")
        try:
            # every autotune config takes its turn in the trials (timing tunes as written);
            # the judge picks the module's mode (kbot.evaluate.module_modes)
            with grad_mode(), in_mode(self.model, request.get("train") is True):
                freeze = frozen(self.model, request.get("frozen") is True)
                with freeze, guarding(guard), in_turn(str(request.get("kind", ""))):
                    returned = self.model(*aliases)
                    outputs = _as_outputs(returned)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
        except BaseException:
            _refuse_compute(guard)  # the torch op, not what the candidate made of its error
            raise
        clock.mark("forward")
        _refuse_compute(guard)  # also when the candidate swallowed the op's error
        _refuse_writes_past(guard, outputs)
        _check_types(outputs)
        copied = guard.copied_outputs(outputs)
        if copied:
            raise Refused(
                "torch-compute",
                f"output {copied[0]} is a torch copy of the inputs' values, not a kernel's result",
            )
        allowed = Allowed(
            inputs=bool(request.get("alias_ok")),
            outputs=bool(request.get("overlap_ok")),
            state=bool(request.get("state_view_ok")),
        )
        why = aliasing_refusal(outputs, buffers, state_tensors(self.model, self.module), allowed)
        if why is not None:
            raise Refused("output-alias", why)
        self._refuse_state_change()
        # a tuple of one where the reference returns a tensor (or the other way) is another
        # interface for its caller: `layer(h)[0]` takes a row of a bare tensor
        reply = {"outputs": outputs, "sequence": isinstance(returned, (tuple, list))}
        if request.get("return_inputs"):
            # Every input crosses back, changed or not, and the judge compares the bytes: an
            # "unchanged" said by this process costs a cheat nothing (a patched torch.equal
            # says it), while bytes that hide a write mean keeping the original.
            reply["inputs_after"] = buffers
        clock.mark("checks")
        encoded = self._with_payload(reply)
        clock.mark("outputs out")
        encoded["steps"] = clock.steps
        return encoded

    def _capture(self, request: dict[str, Any]) -> dict[str, Any]:
        from kbot.evaluate.timing import Implementation, Jitter, capture

        case = int(request["case"])
        buffers = self.places.buffers(case)
        if self.model is None or buffers is None:
            raise Refused("protocol", "capture before an aligned call on this case")
        self._release({})
        model = self.model
        first = [b.detach() if isinstance(b, torch.Tensor) else b for b in buffers]
        copies = [first] + [
            [v.clone() if isinstance(v, torch.Tensor) else v for v in first]
            for _ in range(max(0, int(request["copies"]) - 1))
        ]

        def run_all():
            return [_as_outputs(model(*copy)) for copy in copies]

        # The timed graph is held to the rule of the judged calls: a forward that computed with
        # torch only once the trials were over (a counter the state check did not see) would
        # have its torch time timed.
        guard = ComputeGuard(self.extern)
        try:
            with guarding(guard):
                graph, outputs = capture(run_all)
        except BaseException:
            _refuse_compute(guard)
            raise
        _refuse_compute(guard)
        calls = [lambda c=c: model(*c) for c in copies]
        # keep_alive: each copy's outputs, so the recheck can ask for any one of them
        self.timed = Implementation("candidate", graph, calls, outputs, len(copies))
        self.timed_case = case
        self.timed_copies = copies
        self._jitter = Jitter([value for copy in copies for value in copy], self.rng)
        if self._flush is None:
            from kbot.evaluate.timing import l2_flush_buffer

            self._flush = l2_flush_buffer(self.device)
        return {}

    def _sample(self, request: dict[str, Any]) -> dict[str, Any]:
        from kbot.evaluate.timing import sample_graph, sample_plain

        impl = self._timed()
        n = max(1, min(int(request.get("n", 10)), 1000))
        graph_before, plain_before = len(impl.graph_us), len(impl.plain_us)
        # new input values before every timed replay (kbot.evaluate.timing.Jitter)
        sample_graph(impl, self._flush, n, before=self._jitter)
        sample_plain(impl, n)
        return {
            "graph_us": impl.graph_us[graph_before:],
            "plain_us": impl.plain_us[plain_before:],
            "host_us": impl.host_us[plain_before:],
        }

    def _replay(self, request: dict[str, Any]) -> dict[str, Any]:
        impl = self._timed()
        for _ in range(max(1, min(int(request.get("times", 1)), 100_000))):
            impl.graph.replay()
        torch.cuda.synchronize(self.device)
        return {}

    def _recheck(self, request: dict[str, Any]) -> dict[str, Any]:
        impl = self._timed()
        fresh = wire.decode(request["inputs"], self._payload(request), self.device)
        # The judge picks the copy (any of the graph's calls must compute the answer, not
        # only the first one's).
        copy = int(request.get("copy", 0))
        if not 0 <= copy < len(self.timed_copies):
            raise Refused("protocol", f"no copy {copy} in the timed graph")
        refill(self.timed_copies[copy], fresh)
        impl.graph.replay()
        torch.cuda.synchronize(self.device)
        self._refuse_state_change()  # after every timed replay, not only the judge's calls
        return self._with_payload({"outputs": impl.keep_alive[copy]})

    def _release(self, request: dict[str, Any]) -> dict[str, Any]:
        self.timed = None
        self.timed_case = None
        self.timed_copies = []
        self._jitter = None
        from kbot.evaluate.timing import free_cached

        free_cached(self.device)
        return {}

    # --- helpers -------------------------------------------------------------------------

    def _refuse_state_change(self) -> None:
        if self.model is None:
            return
        try:
            changed = first_change(self.state, self.model, self.module)
        except StateTypeError as exc:
            raise Refused("model-new", str(exc)) from None
        if changed is not None:
            raise Refused(
                "state-mutated",
                f"`{changed}` changed during a call; forward must keep no state between calls "
                "(ModelNew's parameters, buffers and attributes and the module's values stay "
                "as loaded)",
            )

    def _timed(self):
        if self.timed is None:
            raise Refused("protocol", "no graph captured")
        return self.timed

    def _inside(self, path: str) -> Path:
        resolved = Path(path).resolve()
        if self.folder.resolve() not in resolved.parents:
            raise Refused("protocol", "a path outside the candidate's folder")
        return resolved

    def _payload(self, request: dict[str, Any]) -> str | None:
        path = request.get("payload")
        return None if path is None else str(self._inside(path))

    def _with_payload(self, values: dict[str, Any]) -> dict[str, Any]:
        outbox = wire.Outbox.at(self.folder / "exchange" / f"reply-{next(self._replies)}.bin")
        encoded = {key: wire.encode(value, outbox) for key, value in values.items()}
        encoded["payload"] = outbox.write()
        return encoded


def _as_outputs(value: object) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _shared_pair(value: Any, inputs: list) -> tuple[int, int] | None:
    """The judge's (j, i): argument j is passed as argument i, two tensors of one shape."""
    if value is None:
        return None
    if not (
        isinstance(value, list)
        and len(value) == 2
        and all(type(v) is int and 0 <= v < len(inputs) for v in value)
        and value[0] != value[1]
        and all(isinstance(inputs[v], torch.Tensor) for v in value)
        and inputs[value[0]].shape == inputs[value[1]].shape
    ):
        raise Refused("protocol", f"a shared-input pair that is not two inputs: {value!r}")
    return value[0], value[1]


def _refuse_compute(guard: ComputeGuard) -> None:
    if guard.refusals:  # a kernel that reads an address or runs inline asm beyond arithmetic
        raise Refused(*guard.refusals[0])
    if guard.violations:
        raise Refused(
            "torch-compute",
            f"forward computed with torch outside a Triton kernel (`{guard.violations[0]}`); "
            "only allocation, views, copies of its own buffers and declared extern ops may run "
            "there",
        )


def _refuse_writes_past(guard: ComputeGuard, outputs: tuple) -> None:
    """The patterns past the inputs and forward's buffers (a GPU) and before shifted inputs
    are intact."""
    if guard.canaries is None:
        return
    written = guard.canaries.check(outputs)
    guard.canaries.forget_allocations()
    if written is not None:
        raise Refused("out-of-bounds", written)


def _check_types(outputs: tuple) -> None:
    for index, value in enumerate(outputs):
        if isinstance(value, torch.Tensor):
            if type(value) is not torch.Tensor:
                raise Refused(
                    "output-type", f"output {index} is a {type(value).__name__}, not a torch.Tensor"
                )
        elif not (value is None or isinstance(value, (bool, int, float))):
            raise Refused("output-type", f"output {index} is a {type(value).__name__}")
