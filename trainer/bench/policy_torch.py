#!/usr/bin/env python3
"""PyTorch baseline for BenchmarkPolicyForwardBackward (trainer/bench_test.go).

The same policy as trainer/policy (default config: dim 96, 4 heads, one pre-LN
encoder layer with a 192-wide GELU feed-forward block, GRU-cell decoder with
input feeding and dot-product attention over the encoded context), the same
batch shape (32 items x 64 context tokens + 8 action tokens, vocabulary 400),
and the same work per iteration: teacher-forced forward pass, masked token
cross-entropy, backward pass, zero_grad (no optimiser step). Prints one JSON
object with tokens/s and tokens per CPU-second (context + action tokens).

Only a benchmark baseline: Debian's python3-torch (1.13.1) is not a product
dependency. Usage: python3 trainer/bench/policy_torch.py [--threads 1] [--iters 20]
"""

import argparse
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

BATCH, CONTEXT, ACTION, VOCAB = 32, 64, 8, 400
DIM, HEADS, FFN = 96, 4, 192


class Policy(nn.Module):
    def __init__(self, vocab=VOCAB, dim=DIM, heads=HEADS, ffn=FFN):
        super().__init__()
        self.dim, self.heads = dim, heads
        self.embed = nn.Parameter(torch.randn(vocab, dim))
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.ff1 = nn.Linear(dim, ffn)
        self.ff2 = nn.Linear(ffn, dim)
        self.lnf = nn.LayerNorm(dim)
        # attention pooling next to the mean, and the copy gate (Go config
        # fields AttnPool and Copy, on by default)
        self.pool_q = nn.Parameter(torch.randn(dim, 1) / math.sqrt(dim))
        self.init = nn.Linear(2 * dim, dim)
        self.gen = nn.Linear(dim, 1)
        self.gru = nn.GRUCell(2 * dim, dim)
        self.comb = nn.Linear(2 * dim, dim)
        self.proj = nn.Linear(dim, vocab)
        pos = torch.zeros(512, dim)
        for p in range(512):
            for i in range(dim):
                a = p * 10000 ** (-(2 * (i // 2)) / dim)
                pos[p, i] = math.sin(a) if i % 2 == 0 else math.cos(a)
        self.register_buffer("pos", pos)

    def forward(self, ids, key_mask, dec_in):
        b, t = ids.shape
        d, h = self.dim, self.heads
        dh = d // h
        x = F.embedding(ids, self.embed) + self.pos[:t]
        bias = (1 - key_mask) * -1e9  # [B, T]
        y = self.ln1(x)
        qkv = self.qkv(y).reshape(b, t, 3, h, dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(dh) + bias[:, None, None, :], -1)
        o = (att @ v).permute(0, 2, 1, 3).reshape(b, t, d)
        x = x + self.out(o)
        x = x + self.ff2(F.gelu(self.ff1(self.ln2(x))))
        hs = self.lnf(x)
        pooled = (hs * key_mask[:, :, None]).sum(1) / key_mask.sum(1, keepdim=True)
        pa = torch.softmax(hs @ self.pool_q / math.sqrt(d) + bias[:, :, None], 1)
        pooled = torch.cat([pooled, (pa * hs).sum(1)], 1)
        state = torch.tanh(self.init(pooled))
        onehot = F.one_hot(ids, self.embed.shape[0]).float() * key_mask[:, :, None]
        prev = torch.zeros(b, d)
        ht = hs.transpose(1, 2)
        outs, attn = [], []
        for k in range(dec_in.shape[1]):
            e = F.embedding(dec_in[:, k], self.embed)
            state = self.gru(torch.cat([e, prev], 1), state)
            sc = (state[:, None, :] @ ht) / math.sqrt(d) + bias[:, None, :]
            a = torch.softmax(sc, -1)
            ctx = (a @ hs).squeeze(1)
            prev = torch.tanh(self.comb(torch.cat([state, ctx], 1)))
            outs.append(prev)
            attn.append(a)
        o = torch.stack(outs, 1)
        g = torch.sigmoid(self.gen(o))
        mix = g * torch.softmax(self.proj(o), -1) + (1 - g) * (torch.cat(attn, 1) @ onehot)
        return torch.log(mix.clamp_min(1e-12))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = Policy()
    ids = torch.randint(9, VOCAB, (BATCH, CONTEXT))
    actions = torch.randint(9, VOCAB, (BATCH, ACTION))
    dec_in = torch.cat([torch.full((BATCH, 1), 2), actions[:, :-1]], 1)  # <bos> = 2
    key_mask = torch.ones(BATCH, CONTEXT)
    mask = torch.ones(BATCH, ACTION)

    def step():
        logits = model(ids, key_mask, dec_in)
        lp = torch.log_softmax(logits, -1).gather(2, actions[:, :, None]).squeeze(2)
        loss = -(lp * mask).sum() / mask.sum()
        loss.backward()
        model.zero_grad(set_to_none=False)

    for _ in range(args.warmup):
        step()
    start, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(args.iters):
        step()
    secs = time.perf_counter() - start
    # CPU time as well: on a shared machine wall time mostly measures the
    # neighbours
    cpu = time.process_time() - cpu0
    print(json.dumps({
        "framework": "pytorch",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "batch": BATCH,
        "context": CONTEXT,
        "action": ACTION,
        "params": sum(p.numel() for p in model.parameters()),
        "iters": args.iters,
        "seconds": round(secs, 4),
        "ms_per_iter": round(1000 * secs / args.iters, 3),
        "tokens_per_s": round(args.iters * BATCH * (CONTEXT + ACTION) / secs, 1),
        "tokens_per_cpu_s": round(args.iters * BATCH * (CONTEXT + ACTION) / cpu, 1),
    }))


if __name__ == "__main__":
    main()
