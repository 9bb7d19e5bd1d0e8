"""PyTorch twin of bench.rs: the same tiny pre-LN byte transformer (learned positions, tanh-GELU
MLP, explicit causal attention, untied lm_head), AdamW, full-sequence cross-entropy.
Usage: bench_torch.py LAYERS D_MODEL HEADS CONTEXT BATCH STEPS [DATA_FILE]
Prints: torch layers=.. d=.. tok/s median=.. best=.. loss=.."""
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 264


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        att = att.masked_fill(mask[:t, :t], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Tiny(nn.Module):
    def __init__(self, layers, d, heads, ctx):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(ctx, ctx, dtype=torch.bool), 1))

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.head(self.ln_f(x))


def main():
    a = [int(x) for x in sys.argv[1:7]]
    layers, d, heads, ctx, batch, steps = a
    torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))
    torch.manual_seed(0)
    try:
        data = open(sys.argv[7], "rb").read()
    except (IndexError, OSError):
        data = bytes((i * 7919) % 251 for i in range(200_000))
    data = torch.tensor(list(data), dtype=torch.long)
    model = Tiny(layers, d, heads, ctx)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    off = 0
    times = []
    loss = None
    for s in range(2 + steps):
        rows = []
        for _ in range(batch):
            if off + ctx + 1 > len(data):
                off = 0
            rows.append(data[off:off + ctx + 1])
            off += ctx + 1
        x = torch.stack(rows)
        t0 = time.perf_counter()
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if s >= 2:
            times.append(dt)
    times.sort()
    toks = batch * ctx
    params = sum(p.numel() for p in model.parameters())
    print(f"torch layers={layers} d={d} params={params} tok/s median={toks / times[len(times) // 2]:.0f} "
          f"best={toks / times[0]:.0f} loss={loss.item():.3f}")


if __name__ == "__main__":
    main()
