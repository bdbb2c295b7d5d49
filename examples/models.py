"""Example PyTorch models for the simulator, each with fixed seeds and example inputs.

    from examples.models import EXAMPLES          # or: sys.path.insert(0, "examples")
    module, inputs = EXAMPLES["mlp"].build()
    outputs, report = trnsim.torch.run(module, inputs)

Every builder seeds torch itself, so the weights and inputs are the same on every call.
`scripts/demo.py` runs them all; `tests/python/test_torch_frontend.py` uses them too.
"""

from collections import OrderedDict, namedtuple

import torch
from torch import nn

Example = namedtuple("Example", "name description build")


def mlp(batch=128, d_in=256, hidden=1024, d_out=256, seed=0):
    """Three Linear layers with GELU and ReLU: x[batch, d_in] -> [batch, d_out]."""
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(d_in, hidden), nn.GELU(),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, d_out))
    x = torch.randn(batch, d_in)
    return model.eval(), (x,)


class SmallCNN(nn.Module):
    """Two Conv+BatchNorm+ReLU+MaxPool stages, global average pooling, a Linear head."""

    def __init__(self, in_ch=3, width=32, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_ch, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.MaxPool2d(2))
        self.pool = nn.AdaptiveAvgPool2d(1)  # exported as GlobalAveragePool
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


def small_cnn(batch=8, size=32, seed=0):
    """SmallCNN on x[batch, 3, size, size] -> logits[batch, 10]."""
    torch.manual_seed(seed)
    model = SmallCNN()
    # Non-trivial running statistics, so the folded BatchNorm is not an identity.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.uniform_(m.bias, -0.2, 0.2)
    x = torch.randn(batch, 3, size, size)
    return model.eval(), (x,)


def transformer_block(batch=2, seq=64, d_model=128, heads=4, ff=512, seed=0):
    """nn.TransformerEncoderLayer (batch_first, post-norm, GELU): x[batch, seq, d_model]."""
    torch.manual_seed(seed)
    model = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=ff, dropout=0.0,
                                       activation="gelu", batch_first=True)
    x = torch.randn(batch, seq, d_model)
    return model.eval(), (x,)


EXAMPLES = OrderedDict((e.name, e) for e in (
    Example("mlp", "MLP 256-1024-1024-256 (GELU, ReLU), batch 128", mlp),
    Example("cnn", "CNN 2x(Conv3x3+BN+ReLU+MaxPool) + GlobalAvgPool + Linear, 8x3x32x32",
            small_cnn),
    Example("transformer", "TransformerEncoderLayer d_model 128, 4 heads, ff 512, 2x64 tokens",
            transformer_block),
))
