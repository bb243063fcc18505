#!/usr/bin/env python3
"""PyTorch baseline for BenchmarkCausalForwardBackward (trainer/causal/bench_test.go).

The same causal policy as trainer/causal's DefaultConfig: 64 wide, 2 pre-LN
layers of 4 causal self-attention heads with 256-wide GELU feed-forward blocks,
sinusoidal positions, a 2,000-id vocabulary, image pads embedded from 8 patches
of 8x8 RGB pixels (a linear map plus a learned patch-position vector); the same
item (one stream of 2,048 tokens holding 8 screenshots, every 16th token
trained) and the same work per repetition: forward pass, token cross-entropy at
the trained positions (the last layer's queries, feed-forward block and logits
only there, as the Go model computes them),
backward pass, zero_grad. Prints one JSON object with the median over the
repetitions of tokens per second and per CPU-second (all 2,048 tokens).

Only a benchmark baseline: Debian's python3-torch is not a product dependency.
Usage: python3 trainer/bench/causal_torch.py [--threads 1] [--reps 7] [--device cpu|cuda]
(on cuda each repetition ends with torch.cuda.synchronize(); the GPU check
of docs/gpu.md runs it beside the Go benchmark).
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, TOKENS, IMAGES, EVERY = 2000, 2048, 8, 16
DIM, HEADS, LAYERS, FFN, PATCHES, PATCH_DIM, MAX_CONTEXT = 64, 4, 2, 256, 8, 192, 8192


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.out = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.ff1, self.ff2 = nn.Linear(DIM, FFN), nn.Linear(FFN, DIM)

    def forward(self, x, mask, rows=None):
        """With rows, only those rows' outputs (the last layer, as in Go)."""
        t, dh = x.shape[0], DIM // HEADS
        qkv = self.qkv(self.ln1(x)).reshape(t, 3, HEADS, dh).permute(1, 2, 0, 3)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if rows is not None:
            q, mask, x = q[:, rows], mask[rows], x[rows]
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(dh) + mask, -1)
        x = x + self.out((att @ v).permute(1, 0, 2).reshape(x.shape[0], DIM))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class Causal(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Parameter(torch.randn(VOCAB, DIM))
        self.vision = nn.Linear(PATCH_DIM, DIM)
        self.vision_pos = nn.Parameter(0.02 * torch.randn(PATCHES, DIM))
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.lnf = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)
        pos = torch.zeros(MAX_CONTEXT, DIM)
        for i in range(DIM):
            f = 10000 ** (-(2 * (i // 2)) / DIM)
            a = torch.arange(MAX_CONTEXT, dtype=torch.float64) * f
            pos[:, i] = (torch.sin(a) if i % 2 == 0 else torch.cos(a)).float()
        self.register_buffer("pos", pos)

    def forward(self, ids, pad_pos, pad_idx, feats, rows):
        t = ids.shape[0]
        x = F.embedding(ids, self.embed)
        x = x.index_copy(0, pad_pos, self.vision(feats) + self.vision_pos[pad_idx])
        x = x + self.pos[:t]
        mask = torch.ones(t, t, device=x.device).triu(1) * -1e9
        for layer in self.layers[:-1]:
            x = layer(x, mask)
        return self.head(self.lnf(self.layers[-1](x, mask, rows)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = Causal()
    gap = TOKENS // IMAGES - PATCHES - 2
    ids, pad_pos, pad_idx = [], [], []
    for _ in range(IMAGES):
        ids.append(VOCAB - 3)
        for k in range(PATCHES):
            pad_pos.append(len(ids))
            pad_idx.append(k)
            ids.append(VOCAB - 1)
        ids.append(VOCAB - 2)
        ids.extend(torch.randint(1, VOCAB - 6, (gap,)).tolist())
    rows = [k - 1 for k in range(EVERY - 1, len(ids), EVERY) if ids[k] < VOCAB - 5]
    targets = torch.tensor([ids[r + 1] for r in rows])
    ids, pad_pos, pad_idx = torch.tensor(ids), torch.tensor(pad_pos), torch.tensor(pad_idx)
    rows = torch.tensor(rows)
    feats = torch.rand(len(pad_pos), PATCH_DIM)
    dev = torch.device(args.device)
    model.to(dev)
    ids, pad_pos, pad_idx, rows, targets, feats = (
        t.to(dev) for t in (ids, pad_pos, pad_idx, rows, targets, feats))
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def step():
        logits = model(ids, pad_pos, pad_idx, feats, rows)
        loss = -torch.log_softmax(logits, -1).gather(1, targets[:, None]).sum()
        loss.backward()
        model.zero_grad(set_to_none=False)
        sync()

    step()  # warm-up
    walls, cpus = [], []
    for _ in range(args.reps):
        start, cpu0 = time.perf_counter(), time.process_time()
        step()
        walls.append(time.perf_counter() - start)
        # CPU time as well: on a shared machine wall time mostly measures
        # the neighbours
        cpus.append(time.process_time() - cpu0)
    print(json.dumps({
        "framework": "pytorch",
        "device": args.device,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "tokens": len(ids),
        "params": sum(p.numel() for p in model.parameters()),
        "reps": args.reps,
        "median_seconds": round(statistics.median(walls), 4),
        "tokens_per_s": round(len(ids) / statistics.median(walls), 1),
        "tokens_per_cpu_s": round(len(ids) / statistics.median(cpus), 1),
    }))


if __name__ == "__main__":
    main()
