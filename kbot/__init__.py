"""kbot: evolves faster Triton kernels for the hot PyTorch ops of a repository.

Importing this package has no side effects and does not import torch.
"""

__version__ = "0.1.0"
