"""The layers a decoder-only model runs per token: norms, gated activations, rotary, logits, sampling.

Submodules are imported on demand (`from tinyserve.layers.norm import RMSNorm`) so that using one
layer never imports Triton or triggers torch.compile for another.
"""
