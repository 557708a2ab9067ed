"""The names a PR's files give the kernel's launcher and the patched op (kbot.publish.names)."""

from kbot.publish.adapters import EntryPoint
from kbot.publish.names import free_name, own_names


def _function(name: str) -> EntryPoint:
    return EntryPoint(f"from pkg.ops import {name}", None, f"{name}(*inputs)", False)


def test_nothing_taken_keeps_every_name():
    entry = _function("rms_norm")
    assert own_names("triton_rms_norm", entry, {"Model", "get_inputs"}) == (
        "triton_rms_norm",
        entry,
    )


def test_a_plain_function_sharing_the_launchers_name_gets_its_own_names():
    # lightllm's rotate_half: the launcher, the patched function and the reference's copy.
    kernel, entry = own_names("rotate_half", _function("rotate_half"), {"rotate_half", "Model"})
    assert kernel == "triton_rotate_half"
    assert entry.import_line == "from pkg.ops import rotate_half as patched_rotate_half"
    assert entry.call == "patched_rotate_half(*inputs)"
    assert len({kernel, "patched_rotate_half", "rotate_half"}) == 3


def test_the_launcher_clashing_with_the_import_alone_is_renamed_and_the_import_kept():
    entry = _function("silu_and_mul")
    assert own_names("silu_and_mul", entry, {"Model"}) == ("triton_silu_and_mul", entry)


def test_a_class_entry_renames_its_constructor_not_its_call():
    entry = EntryPoint("from pkg.norm import RMSNorm", "RMSNorm(*init_inputs)", "op(*inputs)", True)
    kernel, named = own_names("rms_norm", entry, {"RMSNorm", "Model"})
    assert kernel == "rms_norm"
    assert named.construct == "patched_RMSNorm(*init_inputs)"
    assert named.call == "op(*inputs)"


def test_free_name_counts_past_taken_names():
    assert free_name("x", set()) == "x"
    assert free_name("x", {"x", "x_2"}) == "x_3"
