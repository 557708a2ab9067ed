"""Says where its process runs (bench/multi_gpu.py, part b): the device it sees, by index, UUID
and PCI bus, printed once when it is built. Its forward is a plain copy, so the judge rejects it
at correctness; only what it printed is read back (the verdict's worker_output)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def copy(x):
    out = torch.empty_like(x)
    _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


def placement():
    if not torch.cuda.is_available():
        return "kbot-placement device=cpu"
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    domain = getattr(props, "pci_domain_id", -1)
    bus = getattr(props, "pci_bus_id", -1)
    slot = getattr(props, "pci_device_id", -1)
    return (
        f"kbot-placement device=cuda:{index} count={torch.cuda.device_count()} "
        f"uuid={props.uuid} pci={domain},{bus},{slot}"
    )


class ModelNew(nn.Module):
    def __init__(self, *init):
        super().__init__()
        print(placement())

    def forward(self, x):
        return copy(x)
