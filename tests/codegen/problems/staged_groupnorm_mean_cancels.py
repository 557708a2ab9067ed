"""GroupNorm without its affine, then the mean over every dim but the batch: the normalised
values of each group sum to zero, so the output is the reference's own
rounding noise (~1e-9). No relative tolerance can judge it; the evaluator compares a kernel
with the reference run in float64 and allows it a few times the reference's own error there. (With an affine, the judge's redrawn
weight and bias no longer cancel: kbot.evaluate.reference_state.)"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.group_norm = nn.GroupNorm(groups, channels, affine=False)

    def forward(self, x):
        return self.group_norm(x).mean(dim=[1, 2, 3])


CASES = [dict(B=3)]


def get_inputs(B):
    return [torch.rand(B, 8, 6, 10)]


def get_init_inputs():
    return [8, 4]
