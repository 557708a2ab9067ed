"""Train and eval mode in the correctness trials (kbot.evaluate.module_modes): some trials call
ModelNew in train mode where the reference's result cannot depend on the mode."""

from __future__ import annotations

import torch

from kbot.evaluate.module_modes import same_in_both_modes, train_trials


class _Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(self.norm(x))


class _ReadsItsMode(torch.nn.Module):
    def forward(self, x):
        return x * 2 if self.training else x


def test_a_reference_whose_result_cannot_depend_on_the_mode():
    assert same_in_both_modes(_Plain())
    assert same_in_both_modes(torch.nn.GELU())


def test_dropout_batch_statistics_or_its_own_mode_reads_keep_eval():
    for reference in (
        torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.1)),
        torch.nn.BatchNorm1d(8),
        torch.nn.InstanceNorm2d(8, track_running_stats=True),
        torch.nn.Sequential(_Plain(), _ReadsItsMode()),
    ):
        assert not same_in_both_modes(reference), reference


def test_train_trials_mix_both_modes_only_where_the_reference_allows():
    for trials in (2, 3, 5):
        for _ in range(20):
            modes = train_trials(trials, True)
            assert len(modes) == trials and True in modes and False in modes
    assert {tuple(train_trials(5, True)) for _ in range(100)} == {
        (True, False, True, False, True),
        (False, True, False, True, False),
    }
    assert train_trials(5, False) == [False] * 5
    assert train_trials(1, True) == [False]
