"""Trains a GPT-style block (causal attention, tied embeddings, cross-entropy) for a
few AdamW steps on the simulated chip and prints the training report.

    PYTHONPATH=runtime/python /usr/bin/python3 examples/train_gpt.py --config trn2
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime",
                                "python"))
import trnsim.torch  # noqa: E402


class GPTBlock(nn.Module):
    def __init__(self, vocab, dim, heads, seq):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        nn.init.normal_(self.emb.weight, std=0.02)  # GPT-2's init: sane tied logits
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.02)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight  # tied
        self.heads = heads
        self.register_buffer("causal", torch.tril(torch.ones(seq, seq)).bool(),
                             persistent=False)

    def forward(self, idx):
        b, t = idx.shape
        x = self.emb(idx) + self.pos[:t]
        d = x.shape[-1]
        hd = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / hd ** 0.5
        att = att.masked_fill(~self.causal[:t, :t], float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        x = x + self.fc2(F.gelu(self.fc(self.ln2(x))))
        return self.head(self.lnf(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="trn2")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--stochastic-rounding", action="store_true",
                    help="engines and DMA casts round bf16 results stochastically")
    ap.add_argument("--recompute", nargs="?", const="selective", choices=("selective", "full"),
                    help="activation recomputation")
    ap.add_argument("--trace", help="write the first step's Perfetto trace here")
    ap.add_argument("--dp", type=int, default=1,
                    help="data parallel over this many ranks (each batch / dp samples)")
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0,
                    help="with --dp: gradient all-reduce bucket size (MiB)")
    ap.add_argument("--no-phase-times", action="store_true",
                    help="skip the separate forward/backward/optimizer programs")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = GPTBlock(args.vocab, args.dim, args.heads, args.seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, args.vocab, (args.steps, args.batch, args.seq + 1))
    batches = [(t[:, :-1], t[:, 1:]) for t in tokens]

    def loss_fn(logits, targets):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    result = trnsim.torch.train(model, loss_fn, opt, batches, config=args.config,
                                precision=args.precision, steps=args.steps,
                                stochastic_rounding=args.stochastic_rounding,
                                recompute=args.recompute or False, trace=args.trace,
                                phase_times=not args.no_phase_times, dp=args.dp,
                                bucket_cap_mb=args.bucket_cap_mb)
    print(result)


if __name__ == "__main__":
    main()
