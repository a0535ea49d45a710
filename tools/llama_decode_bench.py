#!/usr/bin/env python3
"""Decode speed of a dense and a pruned GGUF file in llama.cpp, side by side, with the
memory-bound limit beside each figure: the ratio of bytes one decoded token reads (weights +
KV cache at that context), dense over pruned.

    tools/build-llama-cpp      # once (builds llama-bench)
    python3 tools/llama_decode_bench.py DENSE.gguf PRUNED.gguf --depth 2048,8160 --new-tokens 32
    python3 tools/llama_decode_bench.py DENSE.gguf out/p/model.gguf --pruned-model out/p   # a deci file

For each context depth D, llama.cpp's own `llama-bench -p 0 -n N -d D` fills the KV cache with
D tokens (untimed), then times N decoded tokens; the two files run alternately, `--rounds`
times each with `--reps` repetitions per run, and the median tokens/s of all repetitions is
reported. Threads: `--threads` (default: every CPU this process may use).

Bytes one decoded token reads, as llama.cpp holds the model:
  weights  llama-bench's model_size (every tensor; with tied embeddings the embedding is read
           whole as the output matrix; an untied input embedding, read by row, makes this an
           upper bound),
  KV cache kv_cache_values_per_token (from `headprune inspect FILE --json`, or of the folder
           --pruned-model / --dense-model names: headprune reads GGUF architecture `llama`, not
           the `deci` files of uneven layers; 2 x KV heads x
           head_dim, summed over layers) x 2 bytes (llama.cpp's default f16 cache) x the mean
           position of the timed tokens, D + (N - 1) / 2.
The memory-bound limit of the speedup is dense bytes / pruned bytes ("bytes ratio");
"speedup/ratio" is the measured speedup over it (issue 53 asks for >= 0.8 at 8K).

Multiply-adds one decoded token costs, for a decode that is compute-bound instead (a few CPU
cores): llama-bench's model_n_params (each weight once; tied embeddings assumed as above) +
attention, 2 (q k^T and the weighted values) x position x head_dim x query heads, summed over
layers (`heads_per_layer` and `head_dim` of `headprune inspect --json`). "MAC ratio" is dense /
pruned at the mean position.

Prints a table; --json FILE also writes the rows. Exit 1 when llama-bench or headprune fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KV_BYTES_PER_VALUE = 2  # llama.cpp's default cache type f16 (-ctk/-ctv f16)


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if out.returncode != 0:
        sys.exit(f"llama_decode_bench: {' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def shape(headprune, gguf):
    """KV values per token and attention multiply-adds per token per position, from inspect."""
    summary = json.loads(run([headprune, "inspect", gguf, "--json", "-q"]))
    return {"kv_values": summary["kv_cache_values_per_token"],
            "attention_macs_per_position": 2 * summary["head_dim"] * sum(summary["heads_per_layer"])}


def llama_bench(binary, gguf, depth, new_tokens, reps, threads):
    rows = json.loads(run([binary, "-m", gguf, "-p", "0", "-n", str(new_tokens), "-d", str(depth),
                           "-r", str(reps), "-t", str(threads), "-o", "json"]))
    if len(rows) != 1:
        sys.exit(f"llama_decode_bench: llama-bench gave {len(rows)} rows for {gguf}, expected 1")
    return rows[0]


def measure(args, depth, shapes):
    samples = {"dense": [], "pruned": []}
    size, params = {}, {}
    for r in range(args.rounds):
        for side, path in (("dense", args.dense), ("pruned", args.pruned)):
            print(f"depth {depth}: round {r + 1}/{args.rounds}, {side}...", file=sys.stderr, flush=True)
            row = llama_bench(args.llama_bench, path, depth, args.new_tokens, args.reps, args.threads)
            samples[side] += row["samples_ts"]
            size[side], params[side] = row["model_size"], row["model_n_params"]
    mean_position = depth + (args.new_tokens - 1) / 2
    cell = {"depth": depth, "new_tokens": args.new_tokens, "threads": args.threads}
    for side in ("dense", "pruned"):
        kv_bytes = shapes[side]["kv_values"] * KV_BYTES_PER_VALUE * mean_position
        macs = params[side] + shapes[side]["attention_macs_per_position"] * mean_position
        cell[side] = {"tokens_per_s": statistics.median(samples[side]), "samples": len(samples[side]),
                      "weight_bytes": size[side], "kv_bytes_at_mean_position": kv_bytes,
                      "bytes_per_token": size[side] + kv_bytes, "macs_per_token": macs}
    cell["speedup"] = cell["pruned"]["tokens_per_s"] / cell["dense"]["tokens_per_s"]
    cell["bytes_ratio"] = cell["dense"]["bytes_per_token"] / cell["pruned"]["bytes_per_token"]
    cell["speedup_over_bytes_ratio"] = cell["speedup"] / cell["bytes_ratio"]
    cell["mac_ratio"] = cell["dense"]["macs_per_token"] / cell["pruned"]["macs_per_token"]
    return cell


def print_table(cells):
    mib = 1024 * 1024
    print("depth  new | tokens/s dense -> pruned | speedup | bytes/token dense -> pruned (KV share) | bytes ratio | speedup/ratio | MAC ratio")
    for c in cells:
        d, p = c["dense"], c["pruned"]
        print(f"{c['depth']:5d} {c['new_tokens']:4d} | {d['tokens_per_s']:8.1f} -> {p['tokens_per_s']:8.1f}   |"
              f" {c['speedup']:6.3f}x | {d['bytes_per_token'] / mib:7.1f} -> {p['bytes_per_token'] / mib:7.1f} MiB"
              f" ({d['kv_bytes_at_mean_position'] / d['bytes_per_token']:.0%} -> "
              f"{p['kv_bytes_at_mean_position'] / p['bytes_per_token']:.0%}) | {c['bytes_ratio']:6.3f}x |"
              f" {c['speedup_over_bytes_ratio']:13.3f} | {c['mac_ratio']:6.3f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dense")
    ap.add_argument("pruned")
    ap.add_argument("--depth", default="2048,8160", help="context depths, comma-separated")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3, help="repetitions per llama-bench run")
    ap.add_argument("--rounds", type=int, default=2, help="alternating runs of each file")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--llama-bench", default=os.path.join(ROOT, ".cache/llama.cpp/bin/llama-bench"))
    ap.add_argument("--headprune", default=os.path.join(ROOT, "build/headprune"))
    ap.add_argument("--dense-model", help="checkpoint headprune inspects for DENSE's shape (default: DENSE)")
    ap.add_argument("--pruned-model", help="checkpoint headprune inspects for PRUNED's shape (default: PRUNED)")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    for path in (args.dense, args.pruned, args.llama_bench, args.headprune, args.dense_model, args.pruned_model):
        if path is None:
            continue
        if not os.path.exists(path):
            sys.exit(f"llama_decode_bench: {path} does not exist")
    depths = [int(d) for d in args.depth.split(",")]
    shapes = {"dense": shape(args.headprune, args.dense_model or args.dense),
              "pruned": shape(args.headprune, args.pruned_model or args.pruned)}
    cells = [measure(args, d, shapes) for d in depths]
    print_table(cells)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(cells, f, indent=1)


if __name__ == "__main__":
    main()
