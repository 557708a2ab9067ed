"""torch's scaled_dot_product_attention with `bmm` declared extern: its math decomposition
scales q and k (one kernel each), then bmm, the masked softmax, bmm."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KBOT = dict(extern_ops=["bmm"])


class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    return [torch.randn(2, 3, 7, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 4)]


def get_init_inputs():
    return []
