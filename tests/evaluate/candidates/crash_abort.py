import torch
import torch.nn as nn

# A candidate that dies of SIGABRT in forward. `import os` in a candidate's own code is refused
# by the sandbox's builtins (audit.candidate_builtins), so this fixture reaches os through torch.
_ABORT = torch.serialization.os.abort


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        _ABORT()
