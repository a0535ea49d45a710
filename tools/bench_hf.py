#!/usr/bin/env python3
"""Reference latency: HF transformers (PyTorch) on the same dense and pruned checkpoints, the
same shapes and the same protocol as `headprune bench`, so headprune's latency can be shown as a
ratio to what users would otherwise run.

Run from the repository root, with the pinned reference environment (tools/setup-reference-env),
on an otherwise idle machine, for the same models and shapes on both sides:

    scripts/fetch-model        # once: .cache/models/all-MiniLM-L6-v2
    tools/setup-reference-env  # once: .venv-ref/
    build/headprune bench .cache/models/all-MiniLM-L6-v2 out/minilm-50 \
        --batch-size 1,8,32 --seq-len 32,128,512 --json > bench-headprune.json
    .venv-ref/bin/python tools/bench_hf.py \
        --dense .cache/models/all-MiniLM-L6-v2 --pruned out/minilm-50 \
        --batch-size 1,8,32 --seq-len 32,128,512 --threads $(nproc) \
        --headprune-json bench-headprune.json --out bench-hf.json

Threads: give both the same cores. `headprune --threads N` sets LibTorch's pool and the BLAS
pool to N (README, "Threads"; its JSON reports "threads", "blas_threads" and "blas_threading");
the pip torch here uses MKL, which follows torch.set_num_threads. So run headprune with
--threads N and this script with --threads N.

Options: --dense DIR, --pruned DIR (HF folders; the pruned one carries `pruned_heads` in
config.json, which transformers 4.x honours), --batch-size 1,8,32, --seq-len 32,128,512, --threads N
(default: torch's default), --warmup 2, --min-reps 5, --max-reps 30, --max-seconds 60 (per
shape), --attn sdpa|eager (default sdpa, transformers' default for BERT), --dtype
float32|bfloat16 (default float32), --train-step (time forward + backward to every weight
instead of a forward pass: the dense row of `headprune bench-training`), --seed 1234,
--headprune-json FILE (the output of `headprune bench --json` for the same models and shapes),
--out FILE.json.

Protocol (the same as headprune's pruner/measure/bench.cpp): for each seq, for each batch: random token
ids in [1000, vocab) from torch.manual_seed(seed) (headprune's seed and call; the ids are meant
to match, though the timing does not depend on them), attention_mask all ones, shape [batch, seq]; `warmup` untimed forward
passes of each model; then repetitions that interleave dense and pruned, alternating which goes
first, until both have (p75 - p25) / median < 0.05 after at least `min-reps`, or `max-reps`, or
`max-seconds` has passed (checked only after `min-reps`). A forward pass is
`model(input_ids=..., attention_mask=...).last_hidden_state` under torch.inference_mode(), then
`.sum().item()`, as headprune does. Reported: median / p25 / p75 ms, speedup = dense median /
pruned median, and with --headprune-json, for each shape in both,
headprune_dense_ms / hf_dense_ms and headprune_pruned_ms / hf_pruned_ms (< 1: headprune faster).

Never needed at run time, nor to build or test headprune.
"""

import os

# The models are local; never touch the network.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModel  # noqa: E402

STABLE_SPREAD = 0.05


def positive_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def percentile(values, q):
    # Linear interpolation between closest ranks, as headprune's bench (and numpy's default).
    return float(np.percentile(np.asarray(values, dtype=np.float64), 100 * q))


def stable(values):
    med = percentile(values, 0.5)
    return med > 0 and (percentile(values, 0.75) - percentile(values, 0.25)) / med < STABLE_SPREAD


def summary(values):
    return {"median": percentile(values, 0.5), "p25": percentile(values, 0.25),
            "p75": percentile(values, 0.75)}


def time_forward_ms(model, ids, mask):
    t0 = time.perf_counter()
    out = model(input_ids=ids, attention_mask=mask).last_hidden_state
    out.sum().item()  # as headprune: make sure the work is done
    return (time.perf_counter() - t0) * 1000.0


def train_step_ms(model, ids, mask):
    """`headprune bench-training`'s dense step: forward, loss = mean(h²) in float32, backward to
    every weight (gradients dropped before the step, no optimizer step)."""
    model.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    loss = model(input_ids=ids, attention_mask=mask).last_hidden_state.float().pow(2).mean()
    loss.backward()
    loss.item()
    return (time.perf_counter() - t0) * 1000.0


def blas_info():
    """Lines of torch.__config__.show() that name the BLAS / MKL torch uses (pip wheels link MKL
    statically, so /proc/self/maps does not show it), and torch.__config__.parallel_info() as
    lines (the thread counts ATen, OpenMP and MKL really use)."""
    keys = ("BLAS", "MKL", "MATH KERNEL LIBRARY", "LAPACK")
    lines = []
    for line in torch.__config__.show().splitlines():
        line = line.strip().lstrip("- ").strip()
        if "Build settings" in line:
            # One huge line; keep only its BLAS / LAPACK / MKL settings.
            keep = [kv.strip() for kv in line.split(":", 1)[-1].split(",")
                    if any(k in kv.upper() for k in keys)]
            if keep:
                lines.append("Build settings: " + ", ".join(keep))
        elif any(k in line.upper() for k in keys):
            lines.append(line)
    parallel = [" ".join(line.split()) for line in torch.__config__.parallel_info().splitlines()
                if line.strip()]
    return lines, parallel


def load(folder, attn):
    model = AutoModel.from_pretrained(folder, attn_implementation=attn)
    model.eval()
    heads = None
    encoder = getattr(model, "encoder", None)
    if encoder is not None and hasattr(encoder, "layer"):
        heads = [int(layer.attention.self.num_attention_heads) for layer in encoder.layer]
    return model, heads


def load_headprune(path):
    with open(path) as f:
        data = json.load(f)
    cells = {}
    for c in data.get("results", []):
        cells[(int(c["batch_size"]), int(c["seq_len"]))] = c
    return data, cells


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dense", required=True, help="dense HF checkpoint folder")
    p.add_argument("--pruned", required=True, help="pruned HF checkpoint folder (pruned_heads)")
    p.add_argument("--batch-size", "--batch", dest="batch", type=positive_list, default=[1, 8, 32])
    p.add_argument("--seq-len", "--seq", dest="seq", type=positive_list, default=[32, 128, 512])
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--min-reps", type=int, default=5)
    p.add_argument("--max-reps", type=int, default=30)
    p.add_argument("--max-seconds", type=float, default=60.0, help="per shape")
    p.add_argument("--attn", choices=["sdpa", "eager"], default="sdpa")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                   help="precision both models run in (headprune bench --dtype)")
    p.add_argument("--train-step", action="store_true",
                   help="time a training step (forward + backward to every weight) instead of a "
                        "forward pass: the dense row of `headprune bench-training`")
    p.add_argument("--seed", type=int, default=1234, help="token ids (headprune bench uses 1234)")
    p.add_argument("--headprune-json", help="output of `headprune bench --json` to compare with")
    p.add_argument("--out", help="write the JSON report here")
    a = p.parse_args()
    if a.threads < 0:
        p.error("--threads must be >= 0")
    if a.warmup < 0:
        p.error("--warmup must be >= 0")
    if a.min_reps < 1 or a.max_reps < a.min_reps:
        p.error("--min-reps must be >= 1 and --max-reps >= --min-reps")

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    hp_data, hp_cells = (None, {})
    if a.headprune_json:
        hp_data, hp_cells = load_headprune(a.headprune_json)

    dense, dense_heads = load(a.dense, a.attn)
    pruned, pruned_heads = load(a.pruned, a.attn)
    dense.to(getattr(torch, a.dtype))
    pruned.to(getattr(torch, a.dtype))
    step_ms = train_step_ms if a.train_step else time_forward_ms
    vocab = min(dense.config.vocab_size, pruned.config.vocab_size)
    max_seq = min(dense.config.max_position_embeddings, pruned.config.max_position_embeddings)
    for s in a.seq:
        if s > max_seq:
            p.error(f"sequence length {s} is outside 1..{max_seq} (max_position_embeddings)")
    attn_used = getattr(dense.config, "_attn_implementation", a.attn)
    attn_pruned = getattr(pruned.config, "_attn_implementation", a.attn)
    if attn_pruned != attn_used:
        print(f"warning: attention implementations differ: dense {attn_used}, pruned {attn_pruned}",
              file=sys.stderr)

    results = []
    with contextlib.nullcontext() if a.train_step else torch.inference_mode():
        for seq in a.seq:
            for batch in a.batch:
                torch.manual_seed(a.seed)
                ids = torch.randint(min(1000, vocab - 1), vocab, (batch, seq), dtype=torch.long)
                mask = torch.ones_like(ids)
                for _ in range(a.warmup):
                    step_ms(dense, ids, mask)
                    step_ms(pruned, ids, mask)
                d, q = [], []
                start = time.perf_counter()
                for rep in range(a.max_reps):
                    if rep % 2 == 0:
                        d.append(step_ms(dense, ids, mask))
                        q.append(step_ms(pruned, ids, mask))
                    else:
                        q.append(step_ms(pruned, ids, mask))
                        d.append(step_ms(dense, ids, mask))
                    elapsed = time.perf_counter() - start
                    if rep + 1 >= a.min_reps and ((stable(d) and stable(q)) or elapsed > a.max_seconds):
                        break
                cell = {"batch_size": batch, "seq_len": seq, "reps": len(d),
                        "dense_ms": summary(d), "pruned_ms": summary(q)}
                tokens = batch * seq
                cell["dense_tokens_per_s"] = tokens / (cell["dense_ms"]["median"] / 1000)
                cell["pruned_tokens_per_s"] = tokens / (cell["pruned_ms"]["median"] / 1000)
                cell["speedup"] = cell["dense_ms"]["median"] / cell["pruned_ms"]["median"]
                hp = hp_cells.get((batch, seq))
                if hp is not None:
                    cell["headprune"] = {
                        "dense_ms": hp["dense_ms"]["median"],
                        "pruned_ms": hp["pruned_ms"]["median"],
                        "speedup": hp.get("speedup"),
                        "dense_ratio": hp["dense_ms"]["median"] / cell["dense_ms"]["median"],
                        "pruned_ratio": hp["pruned_ms"]["median"] / cell["pruned_ms"]["median"],
                    }
                print(f"bench batch {batch:>2} seq {seq:>3}: dense {cell['dense_ms']['median']:.2f} ms, "
                      f"pruned {cell['pruned_ms']['median']:.2f} ms, speedup {cell['speedup']:.3f}x "
                      f"over {len(d)} reps", file=sys.stderr, flush=True)
                results.append(cell)

    blas_lines, parallel_info = blas_info()
    report = {
        "tool": "tools/bench_hf.py",
        "results": results,
        "threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "python_version": platform.python_version(),
        "attn_implementation": attn_used,
        "dtype": a.dtype,
        "timed": "training step" if a.train_step else "forward pass",
        "blas": blas_lines,
        "parallel_info": parallel_info,
        "device": "cpu",
        "cpu_count": os.cpu_count(),
        "dense": a.dense,
        "pruned": a.pruned,
        "dense_heads_per_layer": dense_heads,
        "pruned_heads_per_layer": pruned_heads,
        "protocol": {"warmup": a.warmup, "min_reps": a.min_reps, "max_reps": a.max_reps,
                     "max_seconds_per_shape": a.max_seconds, "stable_spread": STABLE_SPREAD,
                     "seed": a.seed, "token_ids": f"[{min(1000, vocab - 1)}, {vocab})"},
    }
    if hp_data is not None:
        report["headprune_json"] = a.headprune_json
        report["headprune_threads"] = hp_data.get("threads")
        report["headprune_torch_version"] = hp_data.get("torch_version")
        report["headprune_blas"] = hp_data.get("blas")
        missing = [f"{b}x{s}" for (b, s) in hp_cells if not any(
            c["batch_size"] == b and c["seq_len"] == s for c in results)]
        report["headprune_shapes_not_run_here"] = missing

    # Table.
    print(f"HF transformers {transformers.__version__}, torch {torch.__version__}, "
          f"{report['threads']} threads, attn {attn_used}, cpu")
    for line in blas_lines:
        print(f"  {line}")
    if pruned_heads is not None:
        print(f"pruned heads per layer: {pruned_heads} (dense {dense_heads})")
    hdr = "batch   seq |  HF dense ms (p25-p75)   |  HF pruned ms (p25-p75)  | speedup | reps"
    if hp_data is not None:
        hdr += " | headprune dense / HF | headprune pruned / HF | headprune speedup"
    print(hdr)
    for c in results:
        dm, pm = c["dense_ms"], c["pruned_ms"]
        row = (f"{c['batch_size']:>5} {c['seq_len']:>5} | {dm['median']:>9.2f} ({dm['p25']:.2f}-{dm['p75']:.2f}) | "
               f"{pm['median']:>9.2f} ({pm['p25']:.2f}-{pm['p75']:.2f}) | {c['speedup']:>6.3f}x | {c['reps']:>4}")
        if hp_data is not None:
            h = c.get("headprune")
            if h is None:
                row += " | (not in headprune JSON)"
            else:
                sp = f"{h['speedup']:.3f}x" if h.get("speedup") is not None else "-"
                row += f" | {h['dense_ratio']:>20.3f} | {h['pruned_ratio']:>21.3f} | {sp:>17}"
        print(row)
    if hp_data is not None:
        print("ratio = headprune median ms / HF median ms (< 1: headprune is faster)")
        if hp_data.get("threads") is not None and hp_data.get("threads") != report["threads"]:
            print(f"note: headprune's JSON says {hp_data.get('threads')} threads (LibTorch intra-op only; "
                  f"its BLAS, {hp_data.get('blas') or 'unknown'}, keeps its own pool), HF ran with "
                  f"{report['threads']} (MKL follows it); make sure both used the same cores",
                  file=sys.stderr)
        if report["headprune_shapes_not_run_here"]:
            print("note: shapes in the headprune JSON not run here: "
                  + ", ".join(report["headprune_shapes_not_run_here"]), file=sys.stderr)

    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        os.replace(tmp, a.out)
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
