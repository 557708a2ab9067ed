"""What the candidate's process compares after every call (kbot.evaluate.state_check): the
bytes of every tensor and the value of every plain Python value that ModelNew and the
candidate's module keep, read without running any of the candidate's code."""

from __future__ import annotations

import types

import pytest
import torch

from kbot.evaluate.object_tables import StateTypeError
from kbot.evaluate.state_check import audit_classes, first_change, snapshot
from kbot.evaluate.state_check import same_bits as _same_bits
from kbot.evaluate.state_check import walk as _walk


def _module(name: str = "candidate", **values) -> types.ModuleType:
    module = types.ModuleType(name)
    vars(module).update(values)
    return module


def test_bytes_are_compared_for_every_shape_and_value():
    assert _same_bits(torch.tensor(3), torch.tensor(3))  # BatchNorm's num_batches_tracked
    assert not _same_bits(torch.tensor(3), torch.tensor(4))
    nan = torch.tensor(float("nan"))
    assert _same_bits(nan, nan.clone())
    assert not _same_bits(torch.tensor(0.0), torch.tensor(-0.0))
    assert _same_bits(torch.zeros(2, 3).t(), torch.zeros(3, 2))
    assert not _same_bits(torch.zeros(2), torch.zeros(2, dtype=torch.float16))


class _Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = [torch.zeros(2)]
        self.calls = 0


class _Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(3))
        self.register_buffer("cache", torch.zeros(4), persistent=False)
        self.counter = torch.zeros(1)
        self._hidden = torch.zeros(1, dtype=torch.int32)  # an underscore is no hiding place
        self.inner = _Inner()


def test_every_tensor_and_plain_value_the_model_keeps_is_seen():
    model = _Outer()
    names = {name for name, _ in _walk(model, None)}
    assert {
        "_parameters[str:'weight']", "_buffers[str:'cache']", "counter", "_hidden",
        "inner.table[0]", "inner.calls",
    } <= names  # fmt: skip
    for change in (
        lambda m: m._hidden.add_(1),
        lambda m: m.inner.table[0].add_(1),
        lambda m: m.weight.data.mul_(2),
        lambda m: setattr(m.inner, "calls", 1),
        lambda m: setattr(m, "seen", 1),  # a name that was not there when loaded
        lambda m: m.inner.table.append(0),
    ):
        model = _Outer()
        before = snapshot(model, None)
        assert first_change(before, model, None) is None
        change(model)
        assert first_change(before, model, None) is not None


def test_module_globals_class_attributes_and_objects_are_seen():
    class Holder:
        pass

    class ModelNew(torch.nn.Module):
        hist: list = []  # a class attribute, read as self.hist

    for cls in (Holder, ModelNew):
        cls.__module__ = "candidate"
    holder = Holder()
    holder.count = torch.zeros(1)
    module = _module(
        COUNTERS=[torch.zeros(1)], TOTAL=torch.zeros(1), holder=holder, ModelNew=ModelNew,
        ns=types.SimpleNamespace(n=0),
    )  # fmt: skip
    for change in (
        lambda: module.COUNTERS[0].add_(1),
        lambda: module.TOTAL.add_(1),
        lambda: holder.count.add_(1),
        lambda: ModelNew.hist.append(1),
        lambda: setattr(module.ns, "n", 1),
    ):
        before = snapshot(None, module)
        change()
        assert first_change(before, None, module) is not None


def test_default_arguments_and_closures_of_the_module_are_seen():
    module = _module()
    exec(  # a function of the candidate's module: its globals are the module's
        "def make():\n"
        "    calls = []\n"
        "    def launcher(x, _seen={}):\n"
        "        calls.append(1)\n"
        "        _seen[len(calls)] = x\n"
        "        return x\n"
        "    return launcher\n"
        "launcher = make()\n",
        vars(module),
    )
    before = snapshot(None, module)
    module.launcher(0)
    assert first_change(before, None, module) is not None


def test_a_class_or_function_claiming_to_be_torchs_is_walked_as_the_candidates():
    module = _module()
    exec(
        "import torch\n"
        "class Box:\n"
        "    pass\n"
        "Box.__module__ = 'torch.box'\n"
        "BOX = Box()\n"
        "BOX.count = torch.zeros(1)\n"
        "def bump(seen=[]):\n"
        "    seen.append(1)\n"
        "bump.__module__ = 'torch'\n",
        vars(module),
    )
    for change in (lambda: module.BOX.count.add_(1), lambda: module.bump()):
        before = snapshot(None, module)
        change()
        assert first_change(before, None, module) is not None


def test_the_walk_runs_none_of_the_candidates_methods():
    ran = []

    class Box(dict):
        def items(self):
            ran.append("items")
            return dict.items(self)

    class Seq(list):
        def __iter__(self):
            ran.append("iter")
            return list.__iter__(self)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.box = Box(a=torch.zeros(1))
            self.seq = Seq([torch.zeros(1)])

    model = Model()
    before = snapshot(model, None)
    model.box["a"].add_(1)
    assert first_change(before, model, None) == "box[str:'a']"
    assert ran == []


def test_a_module_class_that_overrides_what_the_judge_calls_is_refused():
    class Aux(torch.nn.Module):
        def named_modules(self, *args, **kwargs):  # runs when the judge walks ModelNew
            return super().named_modules(*args, **kwargs)

    class Child(torch.nn.Module):
        def train(self, mode=True):  # runs in model.eval(), after the weights arrive
            return super().train(mode)

    for helper in (Aux, Child):
        model = torch.nn.Module()
        model.aux = helper()
        with pytest.raises(StateTypeError, match="defines"):
            audit_classes(model, None)
    audit_classes(_Outer(), None)  # plain modules and torch's own pass


def test_a_class_with_its_own_dict_or_a_tensor_subclass_is_refused():
    class Sneaky:
        @property
        def __dict__(self):  # would run when the walk reads the object
            return {}

    Sneaky.__module__ = "candidate"
    with pytest.raises(StateTypeError, match="__dict__"):
        snapshot(None, _module(thing=Sneaky()))

    class Counted(torch.Tensor):
        pass

    model = torch.nn.Module()
    model.t = torch.zeros(2).as_subclass(Counted)
    with pytest.raises(StateTypeError, match="Counted"):
        audit_classes(model, None)


def test_plain_values_are_compared_with_their_type_and_nan_equals_itself():
    model = torch.nn.Module()
    model.flag = 0
    model.eps = float("nan")
    before = snapshot(model, None)
    assert first_change(before, model, None) is None  # a NaN is no change
    for value in (0.0, False):  # equal to 0 in Python, a different state all the same
        model.flag = value
        assert first_change(before, model, None) == "flag"


def test_a_tensors_whole_storage_and_its_gradient_are_compared():
    model = torch.nn.Module()
    model.head = torch.zeros(2)[:1]  # a counter in the storage past the view
    model.empty = torch.zeros(4)[:0]
    model.p = torch.nn.Parameter(torch.zeros(2))
    model.p.grad = torch.zeros(2)
    for change in (
        lambda m: m.head.as_strided((1,), (1,), 1).add_(1),
        lambda m: m.empty.as_strided((1,), (1,), 2).add_(1),
        lambda m: m.p.grad.add_(1),
    ):
        before = snapshot(model, None)
        change(model)
        assert first_change(before, model, None) is not None


def test_keys_and_set_items_are_compared_by_value():
    model = torch.nn.Module()
    model.table = {(0, 1): "a"}
    model.seen = {(0,)}
    before = snapshot(model, None)
    del model.table[(0, 1)]
    model.table[(0, 2)] = "a"
    assert first_change(before, model, None) == "table"
    before = snapshot(model, None)
    model.seen.add((1,))
    assert first_change(before, model, None) == "seen"


@pytest.mark.parametrize(
    "value",
    [range(3), iter([1, 2]), (i for i in range(3)), __import__("itertools").count()],
    ids=["range", "iterator", "generator", "count"],
)
def test_objects_whose_state_the_walk_cannot_read_are_refused(value):
    model = torch.nn.Module()
    model.thing = value
    with pytest.raises(StateTypeError, match="can hold state"):
        snapshot(model, None)


def test_state_nested_past_the_depth_limit_is_refused():
    deep: list = [0]
    for _ in range(12):
        deep = [deep]
    with pytest.raises(StateTypeError, match="nested deeper"):
        snapshot(None, _module(DEEP=deep))


def test_a_triton_config_kept_by_the_module_is_walked():
    import triton

    config = triton.Config({"BLOCK": 64, "seen": [0]})
    module = _module(CONFIG=config, torch=torch, float32=torch.float32)
    before = snapshot(None, module)
    config.kwargs["seen"].append(1)
    assert first_change(before, None, module) is not None


def test_a_named_tuple_or_dataclass_config_on_the_model_is_read_not_refused():
    import dataclasses
    import typing

    class Launch(typing.NamedTuple):
        block: int = 128
        warps: int = 4

    @dataclasses.dataclass
    class Spec:
        eps: float = 1e-6

    for cls in (Launch, Spec):
        cls.__module__ = "candidate"
    model = torch.nn.Module()
    model.launch, model.spec = Launch(), Spec()
    module = _module(Launch=Launch, Spec=Spec)
    before = snapshot(model, module)
    assert first_change(before, model, module) is None
    model.spec.eps = 1e-5
    assert first_change(before, model, module) == "spec.eps"


def test_tensors_inside_library_objects_and_typing_aliases_are_compared():
    import typing

    counter = torch.zeros(1)
    model = torch.nn.Module()
    model.dist = torch.distributions.Normal(torch.zeros(1), torch.ones(1))
    module = _module(HINT=typing.Annotated[int, counter])
    before = snapshot(model, module)
    model.dist.loc.add_(1)
    assert first_change(before, model, module) is not None
    before = snapshot(model, module)
    counter.add_(1)
    assert first_change(before, model, module) is not None


def test_a_tensor_as_a_dict_key_or_set_item_is_refused():
    for value in ({torch.zeros(1): 0}, frozenset({torch.zeros(1)})):
        model = torch.nn.Module()
        model.table = value
        with pytest.raises(StateTypeError, match="key of type Tensor"):
            snapshot(model, None)


def test_a_table_keyed_by_torch_dtype_is_read_by_value():
    """`{torch.float16: tl.float16}`, a common launcher table: a torch.dtype key holds no
    state, so it is compared as its name; a new key is still a change."""
    model = torch.nn.Module()
    module = _module(_OUT={torch.float16: "fp16", torch.bfloat16: "bf16"})
    before = snapshot(model, module)
    assert first_change(before, model, module) is None
    module._OUT[torch.float32] = "fp32"
    assert first_change(before, model, module) == "module-level _OUT"


def test_what_a_triton_object_holds_is_state():
    """A TensorDescriptor is a mutable Triton object without a kernel function: its `base`
    tensor and its shape list are compared (round nine hid counters and result caches there),
    and Triton's dtypes, held as module constants, pass unchanged."""
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    model = torch.nn.Module()
    model.stats = TensorDescriptor(torch.zeros(16), [16], [1], [16])
    module = _module(OUT_DTYPE=tl.float16, ACC=tl.float32)
    assert first_change(snapshot(model, module), model, module) is None
    for change in (
        lambda: model.stats.base.add_(1),
        lambda: model.stats.shape.append(1),
        lambda: setattr(model.stats, "base", torch.zeros(16)),
    ):
        before = snapshot(model, module)
        change()
        assert first_change(before, model, module) is not None


def test_dunder_named_globals_and_class_attributes_are_state_too():
    class ModelNew(torch.nn.Module):
        pass

    ModelNew.__module__ = "candidate"
    ModelNew.__wcache__ = {}
    module = _module(__pool__=torch.zeros(1), ModelNew=ModelNew)
    for change in (
        lambda: module.__pool__.add_(1),
        lambda: ModelNew.__wcache__.update(w=1),
    ):
        before = snapshot(None, module)
        change()
        assert first_change(before, None, module) is not None


def test_a_parameter_the_module_also_holds_is_found():
    from kbot.evaluate.aliasing import held_outside

    shared = {}

    class ModelNew(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = shared.setdefault(8, torch.nn.Parameter(torch.ones(8)))
            self.own = torch.nn.Parameter(torch.ones(8))

    ModelNew.__module__ = "candidate"
    model = ModelNew()
    assert held_outside(model, _module(SHARED=shared, ModelNew=ModelNew)) == (
        "weight",
        "module-level SHARED[int:8]",
    )
    assert held_outside(model, _module(ModelNew=ModelNew)) is None


def test_a_rotary_table_shared_from_a_cache_is_allowed_a_loaded_buffer_is_not():
    """vLLM's get_rope hands every layer of one size the same rotary module, so its cos/sin
    table (a non-persistent buffer built from the constructor's arguments) is shared: allowed
    (round twelve's honest hunt). A buffer a checkpoint loads, or one whose name Model's
    state_dict has, is still refused."""
    from kbot.evaluate.aliasing import held_outside

    tables = {}

    class ModelNew(torch.nn.Module):
        def __init__(self):
            super().__init__()
            cache = tables.setdefault(64, torch.randn(16, 64))
            self.register_buffer("cos_sin_cache", cache, persistent=False)
            self.register_buffer("scale", tables.setdefault("s", torch.ones(4)), persistent=False)

    ModelNew.__module__ = "candidate"
    model = ModelNew()
    module = _module(TABLES=tables, ModelNew=ModelNew)
    assert held_outside(model, module, frozenset({"scale"})) == (
        "scale",
        "module-level TABLES[str:'s']",
    )
    assert held_outside(model, module, frozenset()) is None
    assert held_outside(model, module)[0] == "cos_sin_cache"  # no list of Model's: as before


def test_constructions_compare_what_they_leave_not_which_objects():
    """ModelNew is built twice (kbot.evaluate.host_session): a constructor that writes an equal
    config dict into its module each time is alike; one that counts its instances is not."""
    import types as _types

    from kbot.evaluate.state_check import first_change, snapshot

    module = _types.ModuleType("kbot_test_constructions")
    module.CONFIG = {}
    module.BUILT = []
    module.CONFIG[384] = {"BLOCK": 512, "warps": 4}
    once = snapshot(None, module, identity=False)
    module.CONFIG[384] = {"BLOCK": 512, "warps": 4}  # rebuilt, equal
    assert first_change(once, None, module, identity=False) is None
    assert first_change(snapshot(None, module), None, module) is None
    before = snapshot(None, module)
    module.CONFIG[384] = {"BLOCK": 512, "warps": 4}
    assert first_change(before, None, module) is not None  # between calls, identity counts
    module.BUILT.append(1)
    assert first_change(once, None, module, identity=False) == "module-level BUILT"


def test_a_flag_class_of_the_candidates_is_walked():
    """Every enum.Flag class holds the standard library's FlagBoundary (`_boundary_`): a member
    of a library enum is a reference, so an IntFlag of the candidate's is not refused."""
    import enum
    import types as _types

    from kbot.evaluate.state_check import walk

    module = _types.ModuleType("kbot_test_flags")

    class Mode(enum.IntFlag):
        SCALE = 1
        SHIFT = 2

    Mode.__module__ = module.__name__
    module.Mode = Mode
    assert any(name.startswith("module-level Mode") for name, _ in walk(None, module))
