"""bytes_moved counts what a call can touch: a gathered buffer by its gathered rows (RoPE at
T=1 reads one row of its cos/sin cache), a slice by the slice, an unread buffer not at all;
a reference that reads values (a boolean mask) is counted in full, as before."""

import torch
import torch.nn as nn

from kbot.evaluate.roofline import DevicePeaks, bytes_moved, roofline_fraction, tensor_bytes


class Rope(nn.Module):
    def __init__(self, max_positions: int = 8192, dim: int = 128):
        super().__init__()
        self.register_buffer("cos_sin_cache", torch.randn(max_positions, dim))  # 4 MiB

    def forward(self, positions, q):
        cos, sin = self.cos_sin_cache[positions].chunk(2, dim=-1)
        q1, q2 = q.chunk(2, dim=-1)
        return torch.cat([q1 * cos - q2 * sin, q2 * cos + q1 * sin], dim=-1)


class Gathers(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(50_000, 64)
        self.register_buffer("rows", torch.randn(10_000, 64))
        self.register_buffer("unused", torch.zeros(100_000))

    def forward(self, ids, x):
        picked = torch.index_select(self.rows, 0, ids)
        taken = torch.gather(self.rows, 0, ids[:, None].expand(-1, 64))
        return self.table(ids) + picked + taken + x


class Sliced(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.randn(4096, 64))
        self.weight = nn.Parameter(torch.ones(64))

    def forward(self, x):
        return (x + self.cache[: x.shape[0]]) * self.weight


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(1000))

    def forward(self, x):
        return x[x > 0] + self.table[:1]


def _bytes(model, inputs):
    with torch.no_grad():
        out = model(*inputs)
    return bytes_moved(inputs, model, (out,)), out


def test_rope_at_decode_reads_one_row_of_its_cache():
    model = Rope()
    positions, q = torch.tensor([7]), torch.randn(1, 128)
    moved, out = _bytes(model, [positions, q])
    row = 128 * 4
    assert moved == tensor_bytes([positions, q, out]) + row
    # before: the whole 4 MiB cache on every call
    assert tensor_bytes([model.cos_sin_cache]) == 8192 * row
    # a 2 us decode kernel on an H200-like device is far under the roofline, not above it
    peaks = DevicePeaks("gpu", 4.2e12, 4.6e12, 670e12, 400e12, 50e12)
    assert roofline_fraction(moved, 0, 2.0, peaks.copy, peaks.compute(None)) < 0.001
    # at prefill every position is read: T rows
    positions, q = torch.arange(4096), torch.randn(4096, 128)
    moved, out = _bytes(model, [positions, q])
    assert moved == tensor_bytes([positions, q, out]) + 4096 * row


def test_index_select_embedding_and_gather_count_their_rows_and_unread_buffers_nothing():
    model = Gathers()
    ids, x = torch.tensor([3, 1, 4]), torch.randn(3, 64)
    moved, out = _bytes(model, [ids, x])
    rows = 3 * 64 * 4
    # embedding, index_select and gather each read 3 rows; ids are read whole (by several
    # ops: once), x once, the output written once; `unused` and the rest of the tables not
    assert moved == tensor_bytes([ids, x, out]) + 3 * rows


def test_a_slice_counts_the_slice_and_a_plain_parameter_counts_in_full():
    model = Sliced()
    x = torch.randn(2, 64)
    moved, out = _bytes(model, [x])
    assert moved == tensor_bytes([x, out]) + 2 * 64 * 4 + tensor_bytes([model.weight])


def test_a_reference_that_reads_values_is_counted_in_full():
    model = Masked()
    x = torch.randn(100)
    moved, out = _bytes(model, [x])
    assert moved == tensor_bytes([x, model.table, out])
