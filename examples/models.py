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


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (torch 1.x has no nn.RMSNorm)."""

    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_tables(seq, head_dim, base=10000.0):
    """cos and sin [seq, head_dim] of rotary position embeddings: pair i of a head's
    halves turns by position * base^(-2i/head_dim)."""
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    ang = torch.outer(torch.arange(seq).float(), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention with a causal mask; `rotary` applies rotary position
    embeddings to q and k (Llama), `fused_qkv` projects q, k, v with one Linear (GPT-2)."""

    def __init__(self, d, heads, seq, bias, rotary, fused_qkv):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        if fused_qkv:
            self.qkv = nn.Linear(d, 3 * d, bias=bias)
        else:
            self.q = nn.Linear(d, d, bias=bias)
            self.k = nn.Linear(d, d, bias=bias)
            self.v = nn.Linear(d, d, bias=bias)
        self.o = nn.Linear(d, d, bias=bias)
        self.rotary = rotary
        if rotary:
            cos, sin = rotary_tables(seq, self.head_dim)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)
        # Additive mask: 0 on and below the diagonal, a large negative above it.
        mask = torch.full((seq, seq), -1e9).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, s, d = x.shape
        if hasattr(self, "qkv"):
            q, k, v = self.qkv(x).split(d, dim=-1)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = (t.reshape(b, s, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        if self.rotary:
            q = q * self.cos + rotate_half(q) * self.sin
            k = k * self.cos + rotate_half(k) * self.sin
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5 + self.mask
        y = torch.softmax(scores, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, s, d))


class LlamaLayer(nn.Module):
    """A Llama decoder layer: pre-RMSNorm causal attention with rotary embeddings and a
    pre-RMSNorm SwiGLU MLP, each with a residual; no biases."""

    def __init__(self, seq, d, heads, ff, eps=1e-5):
        super().__init__()
        self.attn_norm = RMSNorm(d, eps)
        self.attn = CausalSelfAttention(d, heads, seq, bias=False, rotary=True, fused_qkv=False)
        self.mlp_norm = RMSNorm(d, eps)
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        h = self.mlp_norm(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


def llama_layer(seq=2048, d=4096, heads=32, ff=11008, batch=1, seed=0):
    """LlamaLayer (Llama-7B shapes by default) on x[batch, seq, d]."""
    torch.manual_seed(seed)
    model = LlamaLayer(seq, d, heads, ff)
    for m in model.modules():
        if isinstance(m, RMSNorm):
            nn.init.uniform_(m.weight, 0.5, 1.5)
    x = torch.randn(batch, seq, d)
    return model.eval(), (x,)


class LlamaDecodeLayer(nn.Module):
    """LlamaLayer for one decode step: x[batch, 1, d] is the newest token of each
    sequence, k_cache / v_cache[batch, heads, ctx, head_dim] the rotated keys and the
    values of the ctx tokens before it (model inputs, so they live in HBM). The token
    sits at position ctx; it attends to the cache and to itself. Returns the layer's
    output and the token's key and value (for the caller to append to the cache)."""

    def __init__(self, ctx, d, heads, ff, eps=1e-5):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.attn_norm = RMSNorm(d, eps)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.mlp_norm = RMSNorm(d, eps)
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)
        cos, sin = rotary_tables(ctx + 1, self.head_dim)
        self.register_buffer("cos", cos[ctx:], persistent=False)  # position ctx
        self.register_buffer("sin", sin[ctx:], persistent=False)

    def forward(self, x, k_cache, v_cache):
        b = x.shape[0]
        h = self.attn_norm(x)
        q, k, v = (t(h).reshape(b, 1, self.heads, self.head_dim).transpose(1, 2)
                   for t in (self.q, self.k, self.v))
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        keys = torch.cat([k_cache, k], dim=2)
        values = torch.cat([v_cache, v], dim=2)
        s = q @ keys.transpose(-2, -1) * self.head_dim ** -0.5
        y = torch.softmax(s, dim=-1) @ values
        x = x + self.o(y.transpose(1, 2).reshape(b, 1, -1))
        hm = self.mlp_norm(x)
        return x + self.down(nn.functional.silu(self.gate(hm)) * self.up(hm)), k, v


def llama_decode(batch=8, ctx=2048, d=4096, heads=32, ff=11008, seed=0):
    """LlamaDecodeLayer (Llama-7B shapes by default): one new token for each of `batch`
    sequences with `ctx` cached tokens; inputs x[batch, 1, d] and the two caches."""
    torch.manual_seed(seed)
    model = LlamaDecodeLayer(ctx, d, heads, ff)
    for m in model.modules():
        if isinstance(m, RMSNorm):
            nn.init.uniform_(m.weight, 0.5, 1.5)
    hd = d // heads
    x = torch.randn(batch, 1, d)
    k_cache = torch.randn(batch, heads, ctx, hd)
    v_cache = torch.randn(batch, heads, ctx, hd)
    return model.eval(), (x, k_cache, v_cache)


class Gpt2Block(nn.Module):
    """A GPT-2 block: pre-LayerNorm causal attention (one fused q/k/v Linear) and a
    pre-LayerNorm GELU (tanh) MLP, each with a residual."""

    def __init__(self, seq, d, heads, ff):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, seq, bias=True, rotary=False, fused_qkv=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, ff), nn.GELU(approximate="tanh"), nn.Linear(ff, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt2Stack(nn.Module):
    """`layers` GPT-2 blocks and the final LayerNorm, on hidden states (no embeddings)."""

    def __init__(self, layers, seq, d, heads, ff):
        super().__init__()
        self.blocks = nn.Sequential(*(Gpt2Block(seq, d, heads, ff) for _ in range(layers)))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, x):
        return self.ln_f(self.blocks(x))


def gpt2_stack(layers=12, seq=512, d=768, heads=12, ff=3072, batch=1, seed=0):
    """Gpt2Stack (GPT-2 small shapes by default) on x[batch, seq, d]."""
    torch.manual_seed(seed)
    model = Gpt2Stack(layers, seq, d, heads, ff)
    x = torch.randn(batch, seq, d)
    return model.eval(), (x,)


class TpBlock(nn.Module):
    """Attention (separate q/k/v Linears, heads by reshape) + residual + LayerNorm + GELU
    MLP + residual: the shape `trnsim run --tp N` splits Megatron-style (heads, then
    column/row MatMul pairs). Reshapes keep the batch as -1, so `--dp D` can split it."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln = nn.LayerNorm(d)
        self.f1, self.f2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        s, d = x.shape[1], x.shape[2]
        h, dh = self.heads, d // self.heads
        q, k, v = (m(x).reshape(-1, s, h, dh).transpose(1, 2) for m in (self.q, self.k, self.v))
        a = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / dh ** 0.5), dim=-1)
        x = x + self.o((a @ v).transpose(1, 2).reshape(-1, s, d))
        return x + self.f2(torch.nn.functional.gelu(self.f1(self.ln(x))))


def tp_block(batch=1, seq=256, d=1024, heads=16, ff=4096, seed=0):
    """TpBlock on x[batch, seq, d]."""
    torch.manual_seed(seed)
    model = TpBlock(d, heads, ff)
    x = torch.randn(batch, seq, d)
    return model.eval(), (x,)


EXAMPLES = OrderedDict((e.name, e) for e in (
    Example("mlp", "MLP 256-1024-1024-256 (GELU, ReLU), batch 128", mlp),
    Example("cnn", "CNN 2x(Conv3x3+BN+ReLU+MaxPool) + GlobalAvgPool + Linear, 8x3x32x32",
            small_cnn),
    Example("transformer", "TransformerEncoderLayer d_model 128, 4 heads, ff 512, 2x64 tokens",
            transformer_block),
    Example("tp_block", "attention (16 heads) + LayerNorm + MLP, d 1024, ff 4096, 256 tokens "
            "(splits under --tp)", tp_block),
))
