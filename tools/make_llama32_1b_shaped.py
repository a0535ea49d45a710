"""Writes a model folder shaped exactly as meta-llama/Llama-3.2-1B (its config.json's values:
16 layers, hidden 2048, 32 query / 8 KV heads of 64, SwiGLU 8192, vocabulary 128,256, tied
embeddings, RoPE base 5e5 with Llama 3's frequency scaling), with seeded random weights,
made and saved by transformers' own LlamaForCausalLM as bfloat16 safetensors (~2.5 GB): the
1B-class model of issue 37, without downloading Llama's weights (which PyPI does not carry).

The weights are transformers' own initialisation (normal, std initializer_range 0.02; norms 1)
under torch.manual_seed(SEED): random, so the model's text is noise, but every tensor has the
real shape and dtype, which is what memory, speed and exactness at this scale depend on.
The tokenizer is the byte-level BPE of tests/fixtures/llama3 (384 tokens, Qwen2's pipeline):
Llama 3's own tokenizer is not reachable here. Its ids are a subset of the 128,256 rows.

    .venv-current/bin/python tools/make_llama32_1b_shaped.py OUT [--layers N] [--seed S]
        [--device cuda] [--reference]
    .venv-current/bin/python tools/make_llama32_1b_shaped.py --reference-of FOLDER [--device cuda]

--layers N keeps Llama 3.2 1B's widths with fewer layers (a quicker check of the same
shapes); --device cuda initialises on a GPU (seconds instead of a minute); --reference also
writes OUT/reference.safetensors: transformers' float32 logits (eager attention) of two
right-padded lines of text, [2, T, 128256], which tests/llama32_1b_test.cpp compares with
headprune's (HEADPRUNE_LLAMA32_1B=OUT). --reference-of writes the same file for an existing
folder, e.g. headprune's pruned export of OUT (loaded as LlamaForCausalLM: a uniform prune).
Never touches the network.
"""
import argparse
import json
import os
import shutil
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TOKENIZER = REPO / "tests" / "fixtures" / "llama3"
# meta-llama/Llama-3.2-1B's config.json (transformers' LlamaConfig keys).
LLAMA32_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                  num_attention_heads=32, num_key_value_heads=8, head_dim=64, hidden_act="silu",
                  max_position_embeddings=131072, rms_norm_eps=1e-5, initializer_range=0.02,
                  tie_word_embeddings=True, attention_bias=False, mlp_bias=False, bos_token_id=128000,
                  eos_token_id=128001)
ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
TEXTS = ["The king said that the court would meet again at dawn, and every lord should come armed.",
         "Once upon a time, a small boat sailed across the sea."]


def write_reference(folder, device):
    """folder/reference.safetensors: input_ids, attention_mask [2, T] and float32 logits, from
    LlamaForCausalLM, or from headprune's remote code where the folder registers it (a head
    count transformers 5's LlamaConfig refuses, such as 24 heads of 64 in hidden 2048)."""
    tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)  # not AutoTokenizer: it reads the model config
    batch = tokenizer(TEXTS, return_tensors="pt", padding=True)
    config = json.loads((Path(folder) / "config.json").read_text())
    if "AutoModelForCausalLM" in config.get("auto_map", {}):
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, trust_remote_code=True)
    else:
        model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    model = model.to(device).eval()
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device)).logits
    save_file({"input_ids": batch["input_ids"].contiguous(), "attention_mask": batch["attention_mask"].contiguous(),
               "logits": logits.float().cpu().contiguous()}, str(Path(folder) / "reference.safetensors"))
    return list(batch["input_ids"].shape)


def make(out, layers, seed, device):
    """The 1B-shaped folder in `out` (replaced): bfloat16 weights, Llama 3.2's config.json."""
    config = LlamaConfig(**dict(LLAMA32_1B, num_hidden_layers=layers), rope_parameters=dict(ROPE))
    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    # RoPE as Llama 3.2's config.json writes it (rope_theta top-level, rope_scaling), which
    # transformers 4.x reads too.
    written = json.loads((out / "config.json").read_text())
    rope = written.pop("rope_parameters")
    written["rope_theta"] = rope.pop("rope_theta")
    written["rope_scaling"] = rope
    (out / "config.json").write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER / name, out / name)
    return {"folder": str(out), "parameters": sum(p.numel() for p in model.parameters()),
            "bytes": sum(f.stat().st_size for f in out.glob("*.safetensors"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, nargs="?")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reference", action="store_true")
    ap.add_argument("--reference-of", type=Path)
    args = ap.parse_args()
    if (args.out is None) == (args.reference_of is None):
        ap.error("give OUT, or --reference-of FOLDER")
    t0 = time.time()
    info = make(args.out, args.layers, args.seed, args.device) if args.out else {"folder": str(args.reference_of)}
    if args.reference or args.reference_of:
        info["reference_tokens"] = write_reference(args.out or args.reference_of, args.device)
    info["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
