"""A training script for `trnsim train`: a small MLP classifier, SGD with momentum.

    trnsim train examples/train_mlp.py -c trn2 --precision bf16 --steps 3
"""

import torch
import torch.nn.functional as F
from torch import nn


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))


loss_fn = F.cross_entropy


def optimizer(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


def batches():
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn(32, 64, generator=gen), torch.randint(0, 10, (32,), generator=gen))
            for _ in range(3)]
