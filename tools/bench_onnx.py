#!/usr/bin/env python3
"""Deploy-time speedup: ONNX Runtime (CPU) on headprune's ONNX export of a dense and a pruned
checkpoint, interleaved in one process, with and without ONNX Runtime's transformer graph
optimizations (attention fusion works with per-layer head counts).

Run from the repository root with the pinned current environment (tools/setup-reference-env
--current), on an otherwise idle machine:

    build/headprune export-onnx .cache/models/all-MiniLM-L6-v2 -o dense.onnx
    build/headprune export-onnx out/minilm-50 -o pruned.onnx
    .venv-current/bin/python tools/bench_onnx.py --dense dense.onnx --pruned pruned.onnx \\
        --batch-size 1,8,32 --seq-len 32,128,512 --threads $(nproc) --out bench-onnx.json

Options: --dense FILE, --pruned FILE (ONNX files from `headprune export-onnx`), --batch-size
1,8,32, --seq-len 32,128,512, --threads N (ONNX Runtime intra-op threads; default nproc),
--warmup 2, --min-reps 5, --max-reps 30, --max-seconds 60 (per shape and variant), --seed 1234,
--no-optimize (skip the fused variant), --out FILE.json.

Protocol (headprune bench's, pruner/measure/bench.cpp): for each seq, for each batch: random
token ids in [1000, 30522) from numpy's default_rng(seed), attention_mask all ones,
token_type_ids zeros (where the graph takes them); `warmup` untimed runs of each session; then repetitions that interleave
dense and pruned, alternating which goes first, until both have (p75 - p25) / median < 0.05
after at least `min-reps`, or `max-reps`, or `max-seconds` (checked after `min-reps`). Only
`last_hidden_state` is fetched. Reported per shape and variant: median / p25 / p75 ms and
speedup = dense median / pruned median.

The optimized variant: onnxruntime.transformers.optimizer.optimize_model(path,
model_type="bert", num_heads=0, hidden_size=0) on each file (0 = detect per layer), saved
beside the JSON, then loaded like the plain ones. Its fused node counts are reported, and the
max |diff| of its last_hidden_state against the plain graph's (4 × 48 tokens, three rows padded
after 30 tokens; real tokens only).

Never needed at run time, nor to build or test headprune.
"""

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort


def parse_list(text):
    return [int(x) for x in text.split(",") if x]


def session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def optimized(path, folder):
    from onnxruntime.transformers.optimizer import optimize_model
    model = optimize_model(str(path), model_type="bert", num_heads=0, hidden_size=0)
    out = Path(folder) / (Path(path).stem + ".optimized.onnx")
    model.save_model_to_file(str(out))
    return out, model.get_fused_operator_statistics()


def model_feeds(sess, feeds):
    """The entries of `feeds` the session takes (MPNet and DistilBERT graphs have no token_type_ids)."""
    return {i.name: feeds[i.name] for i in sess.get_inputs()}


def run_once(sess, feeds):
    feeds = model_feeds(sess, feeds)
    start = time.perf_counter()
    sess.run(["last_hidden_state"], feeds)
    return (time.perf_counter() - start) * 1000


def stats(samples):
    p25, med, p75 = np.percentile(samples, [25, 50, 75])
    return {"median_ms": float(med), "p25_ms": float(p25), "p75_ms": float(p75), "reps": len(samples)}


def time_shape(dense, pruned, feeds, args):
    for _ in range(args.warmup):
        run_once(dense, feeds)
        run_once(pruned, feeds)
    times = {"dense": [], "pruned": []}
    start = time.monotonic()
    for rep in range(args.max_reps):
        order = [("dense", dense), ("pruned", pruned)]
        for name, sess in order if rep % 2 == 0 else order[::-1]:
            times[name].append(run_once(sess, feeds))
        if rep + 1 >= args.min_reps:
            stable = all((np.percentile(t, 75) - np.percentile(t, 25)) / np.median(t) < 0.05 for t in times.values())
            if stable or time.monotonic() - start > args.max_seconds:
                break
    d, p = stats(times["dense"]), stats(times["pruned"])
    return {"dense": d, "pruned": p, "speedup": d["median_ms"] / p["median_ms"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dense", required=True)
    ap.add_argument("--pruned", required=True)
    ap.add_argument("--batch-size", default="1,8,32")
    ap.add_argument("--seq-len", default="32,128,512")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--max-reps", type=int, default=30)
    ap.add_argument("--max-seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--no-optimize", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    for f in (args.dense, args.pruned):
        if not Path(f).is_file():
            ap.error(f"{f} is not a file (write it with headprune export-onnx)")

    work = Path(tempfile.mkdtemp(prefix="bench-onnx-")) if not args.out else Path(args.out).resolve().parent
    variants = {"plain": (args.dense, args.pruned)}
    fused = {}
    if not args.no_optimize:
        (d, d_stats), (p, p_stats) = optimized(args.dense, work), optimized(args.pruned, work)
        variants["optimized"] = (d, p)
        fused = {"dense": d_stats, "pruned": p_stats}
    sessions = {v: (session(d, args.threads), session(p, args.threads)) for v, (d, p) in variants.items()}
    rng = np.random.default_rng(args.seed)
    # The fused graphs must compute what the plain ones do (padded rows included).
    agreement = {}
    if "optimized" in sessions:
        ids = rng.integers(1000, 30522, size=(4, 48), dtype=np.int64)
        mask = np.ones_like(ids)
        mask[1:, 30:] = 0
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        for i, name in enumerate(("dense", "pruned")):
            plain = sessions["plain"][i].run(["last_hidden_state"], model_feeds(sessions["plain"][i], feeds))[0]
            fused_out = sessions["optimized"][i].run(["last_hidden_state"], model_feeds(sessions["optimized"][i], feeds))[0]
            agreement[name] = float(np.abs((plain - fused_out) * mask[..., None]).max())
        print(f"optimized vs plain, max |diff| of last_hidden_state on real tokens: {agreement}", flush=True)
    cells = []
    print(f"{'variant':<10} {'batch':>5} {'seq':>4} {'dense ms':>9} {'pruned ms':>9} {'speedup':>7}", flush=True)
    for seq in parse_list(args.seq_len):
        for batch in parse_list(args.batch_size):
            ids = rng.integers(1000, 30522, size=(batch, seq), dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            for variant, (dense, pruned) in sessions.items():
                cell = time_shape(dense, pruned, feeds, args)
                cell.update({"variant": variant, "batch_size": batch, "seq_len": seq})
                cells.append(cell)
                print(f"{variant:<10} {batch:>5} {seq:>4} {cell['dense']['median_ms']:>9.2f} "
                      f"{cell['pruned']['median_ms']:>9.2f} {cell['speedup']:>6.2f}x", flush=True)
    result = {"onnxruntime": ort.__version__, "threads": args.threads, "machine": platform.processor() or platform.machine(),
              "dense": str(args.dense), "pruned": str(args.pruned), "fused_operators": fused,
              "optimized_vs_plain_max_abs_diff": agreement, "cells": cells}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
