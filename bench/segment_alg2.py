#!/usr/bin/env python3
"""A straightforward Python implementation of ScaleCUA's Algorithm 2
(sliding-window trajectory processing with a token-ID stream), the baseline
the Go segmenter (pipeline/segment) is compared with.

Standard library only. Both sides run on the same pre-tokenized input, so
the comparison is of the segmentation algorithm alone, not of BPE
tokenization, Parquet or the lake:

    go run ./pipeline/segment/internal/benchgen -n 2000 -turns 30 -o /tmp/alg2.jsonl
    python3 bench/segment_alg2.py /tmp/alg2.jsonl --mode window --k 5 --delta 5
    go test ./pipeline/segment -run '^$' -bench 'SegmentCore' -benchtime 1x

Input (pipeline/segment/pretok.go): a header line, then one line per
trajectory with its prefix (system prompt and instruction) and, per turn,
the pieces of the chat template: "fresh" (the turn's screenshot message and
the assistant header after closed context), "live" (the same, appended right
after the previous response, which it closes), "resp"/"logp" (the rollout's
response ids and log-probabilities), "ctx" (the whole turn as closed context)
and "summary" (the turn's compact action once its screenshot is dropped). A
piece is a list of chunks: lists of ids, or {"image": N} for
<|vision_start|> N x <|image_pad|> <|vision_end|>.

On pre-tokenized input Tokenize(H) is the concatenation of H's pieces. By
default the token diff is computed literally, as Algorithm 2 writes it:
Tokenize(H + o_t)[len(Tokenize(H)):], re-concatenating the whole history at
every turn. --incremental appends Tokenize(o_t) directly instead, which is
the same here because every piece starts at a special token (the Go code
does this, and falls back to the literal diff where a boundary is not a
special token).

Prints one JSON object: trajectories/s and tokens/s of the algorithm (input
parsing excluded), item and token counts, and with --check a SHA-256 digest
of every item (the layout of segment.Digest), to prove both implementations
produce the same streams.
"""

import argparse
import hashlib
import json
import sys
import time
from array import array


def read(path):
    """Returns the header and the trajectories, image chunks shared."""
    images = {}
    trajs = []
    with open(path, "r", encoding="utf-8") as f:
        header = json.loads(f.readline())
        if header.get("format") != "cualake-segment-pretok/1":
            sys.exit("segment_alg2: %s is not cualake-segment-pretok/1" % path)
        vs, ve, pad = header["vision_start"], header["vision_end"], header["image_pad"]

        def piece(chunks):
            out = []
            for ch in chunks:
                if isinstance(ch, dict):
                    n = ch["image"]
                    if n not in images:
                        images[n] = [vs] + [pad] * n + [ve]
                    out.append(images[n])
                else:
                    out.append(ch)
            return out

        for line in f:
            t = json.loads(line)
            t["prefix"] = piece(t["prefix"])
            t["turns"] = t.get("turns") or []
            for tu in t["turns"]:
                for k in ("fresh", "live", "ctx", "summary"):
                    tu[k] = piece(tu[k])
            trajs.append(t)
    return header, trajs


def tokenize(history):
    """Tokenize(H) on pre-tokenized pieces: their chunks concatenated."""
    out = []
    for piece in history:
        for chunk in piece:
            out.extend(chunk)
    return out


def window(t, limit, delta, literal):
    """Algorithm 2 on one trajectory; limit = K + Delta (None: no pruning,
    trajectory mode). Returns [(ids, mask, logp, first, last)]."""
    turns = t["turns"]
    T = len(turns)
    if T == 0:
        return []
    items = []
    H = [t["prefix"], turns[0]["fresh"]]
    ids = tokenize(H)
    mask = [0] * len(ids)
    logp = [0.0] * len(ids)
    n_img, first, start = 1, 0, 0
    for i in range(T):
        tu = turns[i]
        resp = tu["resp"]
        ids += resp
        mask += [1] * len(resp)
        logp += tu["logp"] if tu["logp"] is not None else [0.0] * len(resp)
        H.append([resp])
        if i == T - 1:
            break
        nxt = turns[i + 1]
        if limit is not None and n_img + 1 > limit:
            # Pruning: save the stream, drop the oldest delta screenshots
            # (their turns keep their summaries), re-tokenize the rest.
            items.append((ids, mask, logp, start, i))
            first += delta
            n_img = n_img + 1 - delta
            start = i + 1
            H = ([t["prefix"]] + [turns[j]["summary"] for j in range(first)]
                 + [turns[j]["ctx"] for j in range(first, i + 1)] + [nxt["fresh"]])
            ids = tokenize(H)
            mask = [0] * len(ids)
            logp = [0.0] * len(ids)
        else:
            if literal:
                l = len(tokenize(H))
                diff = tokenize(H + [nxt["live"]])[l:]
            else:
                diff = tokenize([nxt["live"]])
            ids += diff
            mask += [0] * len(diff)
            logp += [0.0] * len(diff)
            H.append(nxt["live"])
            n_img += 1
    items.append((ids, mask, logp, start, T - 1))
    return items


def step(t, w):
    """One item per turn: summaries, the last w turns in full, the turn."""
    turns = t["turns"]
    items = []
    for i in range(len(turns)):
        lo = max(0, i - w)
        H = ([t["prefix"]] + [turns[j]["summary"] for j in range(lo)]
             + [turns[j]["ctx"] for j in range(lo, i)] + [turns[i]["fresh"]])
        ids = tokenize(H)
        mask = [0] * len(ids)
        logp = [0.0] * len(ids)
        resp = turns[i]["resp"]
        ids += resp
        mask += [1] * len(resp)
        logp += turns[i]["logp"] if turns[i]["logp"] is not None else [0.0] * len(resp)
        items.append((ids, mask, logp, i, i))
    return items


def digest(h, tid, items):
    for k, (ids, mask, logp, first, last) in enumerate(items):
        h.update(("%s\0%d\0%d\0%d\0" % (tid, k, first, last)).encode("utf-8"))
        a = array("i", ids)
        f = array("f", logp)
        if sys.byteorder != "little":
            a.byteswap()
            f.byteswap()
        h.update(a.tobytes())
        h.update(bytes(mask))
        h.update(f.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="pre-tokenized JSON lines (benchgen)")
    ap.add_argument("--mode", choices=["window", "trajectory", "step"], default="window")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--delta", type=int, default=5)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--incremental", action="store_true", help="append Tokenize(o_t) instead of the literal diff")
    ap.add_argument("--check", action="store_true", help="also print a SHA-256 digest of every item (not timed)")
    args = ap.parse_args()
    if args.mode == "window" and (args.k < 1 or args.delta < 1):
        sys.exit("segment_alg2: --k and --delta must be >= 1")

    t0 = time.perf_counter()
    _, trajs = read(args.input)
    load_s = time.perf_counter() - t0

    h = hashlib.sha256()
    items_n = tokens = 0
    elapsed = cpu = 0.0
    for t in trajs:
        s = time.perf_counter()
        c = time.process_time()
        if args.mode == "step":
            items = step(t, args.window)
        elif args.mode == "trajectory":
            items = window(t, None, 1, not args.incremental)
        else:
            items = window(t, args.k + args.delta, args.delta, not args.incremental)
        items_n += len(items)
        for it in items:
            tokens += len(it[0])
        elapsed += time.perf_counter() - s
        cpu += time.process_time() - c
        if args.check:
            digest(h, t["id"], items)

    out = {
        "impl": "python",
        "python": sys.version.split()[0],
        "mode": args.mode,
        "k": args.k,
        "delta": args.delta,
        "window": args.window,
        "diff": "incremental" if args.incremental else "literal",
        "trajectories": len(trajs),
        "items": items_n,
        "tokens": tokens,
        "load_seconds": round(load_s, 3),
        "seconds": round(elapsed, 4),
        "cpu_seconds": round(cpu, 4),
        "trajectories_per_s": round(len(trajs) / elapsed, 2) if elapsed > 0 else None,
        "trajectories_per_cpu_s": round(len(trajs) / cpu, 2) if cpu > 0 else None,
        "tokens_per_s": round(tokens / elapsed) if elapsed > 0 else None,
    }
    if args.check:
        out["digest"] = h.hexdigest()
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
