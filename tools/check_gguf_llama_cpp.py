#!/usr/bin/env python3
"""Checks a GGUF file written by `headprune export-gguf` (or `apply/prune --gguf`) against
llama.cpp: greedy token ids of llama.cpp (tools/build-llama-cpp's llama-greedy) and of
`headprune generate --temperature 0` must be identical, prompt tokenisation included.

    tools/build-llama-cpp      # once
    python3 tools/check_gguf_llama_cpp.py out/p/model.gguf
    python3 tools/check_gguf_llama_cpp.py out/p/model.gguf --headprune-model out/p   # deci files
    .venv-current/bin/python tools/check_gguf_llama_cpp.py out/p/model.gguf --transformers

headprune runs the GGUF file itself unless --headprune-model names another checkpoint (the HF
folder: headprune reads GGUF architecture `llama` only, so a `deci` file is compared with the
folder it came from). --transformers also runs transformers' GGUF loading
(`AutoModelForCausalLM.from_pretrained(dir, gguf_file=...)`, float32, greedy, on llama.cpp's
prompt ids; architectures transformers maps: `llama`, `qwen2`, `phi3`, `qwen3` with head_dim
128 (its mapping ignores attention.key_length), `gemma3` with a head count dividing the width)
and compares its ids too. llama.cpp looks up "</s>" in any vocabulary whose general.name
contains "phi3" (llama-vocab.cpp), so name a Phi-3 fixture's folder otherwise. The prompt is raw text; special tokens in it (ChatML, Gemma's
<start_of_turn>) are parsed as specials by both sides (--gemma-chat: Gemma's turn markers
around the question instead of ChatML). When llama.cpp stops at an end-of-generation token
other than EOS (Gemma's <end_of_turn>), the others' ids are compared up to and including it.
Prints a JSON summary; exit status 1 on any difference.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHATML = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
GEMMA_CHAT = "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n"


def llama_cpp_ids(binary, gguf, prompt, n):
    out = subprocess.run([binary, gguf, str(n), prompt], capture_output=True, text=True, errors="replace")
    if out.returncode != 0:
        sys.exit(f"check_gguf_llama_cpp: llama.cpp failed on {gguf}:\n{out.stderr[-3000:]}")
    lines = out.stdout.split("\n", 2)
    prompt_ids = [int(t) for t in lines[0].split()[1:]]
    generated = [int(t) for t in lines[1].split()[1:]]
    return prompt_ids, generated, lines[2].rstrip("\n")


def headprune_ids(binary, model, prompt, n):
    out = subprocess.run([binary, "--log-level", "debug", "generate", model, "--temperature", "0",
                          "--prompt", prompt, "--max-new-tokens", str(n)],
                         capture_output=True, text=True, errors="replace", env=dict(os.environ, OPENBLAS_CORETYPE="SkylakeX"))
    if out.returncode != 0:
        sys.exit(f"check_gguf_llama_cpp: headprune generate failed on {model}:\n{out.stderr[-3000:]}")
    ids = re.search(r"token ids: ([0-9 ]+)", out.stderr)
    count = re.search(r"\((\d+) prompt tokens", out.stderr)
    if not ids or not count:
        sys.exit("check_gguf_llama_cpp: headprune generate printed no token ids (needs --log-level debug)")
    ids = [int(t) for t in ids.group(1).split()]
    k = int(count.group(1))
    return ids[:k], ids[k:], out.stdout.rstrip("\n")


def transformers_ids(gguf, prompt_ids, n, eos):
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(os.path.abspath(gguf)), gguf_file=os.path.basename(gguf),
                                             torch_dtype=torch.float32).eval()
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt_ids]), max_new_tokens=n, do_sample=False, eos_token_id=eos,
                             pad_token_id=eos)
    return out[0, len(prompt_ids):].tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("--prompt", default=CHATML)
    ap.add_argument("-n", "--max-new-tokens", type=int, default=32)
    ap.add_argument("--headprune", default=os.path.join(ROOT, "build", "headprune"))
    ap.add_argument("--headprune-model", help="checkpoint headprune runs (default: the GGUF file)")
    ap.add_argument("--llama-greedy", default=os.path.join(ROOT, ".cache", "llama.cpp", "bin", "llama-greedy"))
    ap.add_argument("--transformers", action="store_true", help="also compare transformers' GGUF loading")
    ap.add_argument("--gemma-chat", action="store_true", help="Gemma's turn markers instead of ChatML")
    a = ap.parse_args()
    if a.gemma_chat:
        a.prompt = GEMMA_CHAT
    l_prompt, l_gen, l_text = llama_cpp_ids(a.llama_greedy, a.gguf, a.prompt, a.max_new_tokens)
    h_prompt, h_gen, h_text = headprune_ids(a.headprune, a.headprune_model or a.gguf, a.prompt, a.max_new_tokens)
    # llama.cpp's ids end with the end-of-generation token when it stopped early; headprune stops
    # at the same token without keeping it.
    l_stopped = len(l_gen) < a.max_new_tokens
    if l_stopped:
        summary_eog = l_gen[-1]
        l_gen = l_gen[:-1]
        # headprune stops at EOS only: after another end-of-generation token it goes on.
        if len(h_gen) > len(l_gen) and h_gen[len(l_gen)] == summary_eog:
            h_gen = h_gen[:len(l_gen)]
    same = l_prompt == h_prompt and l_gen == h_gen
    agree = next((i for i, (x, y) in enumerate(zip(l_gen, h_gen)) if x != y), min(len(l_gen), len(h_gen)))
    summary = {"gguf": a.gguf, "prompt_ids_equal": l_prompt == h_prompt, "prompt_tokens": len(l_prompt),
               "llama_cpp": " ".join(map(str, l_gen)), "headprune": " ".join(map(str, h_gen)),
               "llama_cpp_stopped_at": summary_eog if l_stopped else None,
               "first_difference": None if same else agree, "llama_cpp_text": l_text, "headprune_text": h_text}
    if a.transformers:
        t_gen = transformers_ids(a.gguf, l_prompt, a.max_new_tokens, summary_eog if l_stopped else None)
        if l_stopped and summary_eog in t_gen:
            t_gen = t_gen[:t_gen.index(summary_eog)]
        summary["transformers"] = " ".join(map(str, t_gen))
        same = same and t_gen == l_gen
    summary["identical"] = same
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
