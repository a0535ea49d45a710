"""Writes tests/fixtures/{qwen2,qwen3,mistral,phi3,llama3,gemma3}/: small decoders of the LLaMA-style families
made and saved by transformers itself, and their reference outputs, for headprune to match.

No checkpoint of these families is packaged on PyPI small enough to commit, so each model is
transformers' own *ForCausalLM (its own config class, seeded random weights) saved with
save_pretrained as safetensors:
  * qwen2: 3 layers, hidden 64, 4 query heads sharing 2 KV heads of 16, SwiGLU 128, tied
    embeddings, biases on q/k/v (Qwen2's own layout; o_proj has none);
  * qwen3: the same sizes with head_dim 24 (not hidden / heads, as Qwen3 allows), untied
    embeddings, q_norm / k_norm over each head, no biases;
  * mistral: the same sizes, head_dim 16, untied, a sliding window of 8 positions (shorter than
    the reference inputs and the greedy run, so the window decides outputs);
  * phi3: the same sizes, fused qkv_proj and gate_up_proj (Phi-3's own layout), a sliding
    window of 8;
  * gemma3 (Gemma3ForCausalLM, model_type gemma3_text): head_dim 24, query_pre_attn_scalar 20
    (neither hidden / heads nor head_dim), layers sliding (window 8, RoPE base 1e4), global
    (base 1e6), sliding; (1 + w) norms drawn around 0, tied embeddings, GeGLU;
  * llama3: LLaMA with Llama 3.2's layout (tied embeddings, no biases, head_dim 16) and its RoPE
    frequency scaling (rope_type "llama3", factor 8, low/high_freq_factor 1/4, base 5e5) with
    original_max_position_embeddings 64, so that positions of the inputs reach every band (kept,
    interpolated, divided); written as Llama 3.2's config.json does (rope_theta, rope_scaling);
  * rope_theta 1e6 (Qwen) / 1e4, written top-level as the families' config.json files do, so
    that transformers 4.x reads it too; weights redrawn at scales that make every part matter
    (HF initialises biases to zero, norms to one and weights at std 0.02, under which the logits
    would be flat and a wrong bias or norm invisible);
  * a byte-level BPE tokenizer trained here with the `tokenizers` library on Tiny Shakespeare
    (../shared/data/corpus), with Qwen2's own pipeline (Qwen3's is the same): NFC, the Qwen2
    pre-tokenizer regex, ByteLevel, and <|endoftext|> / <|im_start|> / <|im_end|> as special
    tokens. Mistral and Phi-3 ship SentencePiece tokenizers that are not reachable here; the
    fixtures test the models, and share this one.

reference.safetensors holds, from transformers (eager attention, float32, CPU):
  * input_ids / attention_mask [2, T] (two WikiText-2 lines, the shorter padded on the right)
    and their logits [2, T, vocab];
  * prompt_ids and greedy_ids: generate(do_sample=False, max_new_tokens=16) with its KV cache.

    .venv-current/bin/python tools/make_decoder_fixtures.py [FAMILY ...]   (default: all)

Never touches the network.
"""
import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402
from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM,  # noqa: E402
                          MistralConfig, MistralForCausalLM,
                          Phi3Config, Phi3ForCausalLM, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
SHARED = Path(os.environ.get("HEADPRUNE_SHARED_DATA") or REPO.parent / "shared" / "data")
# Qwen2's pre-tokenizer (tokenizer.json of Qwen/Qwen2.5-0.5B, pre_tokenizer.pretokenizers[0]).
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
SIZES = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=256, rms_norm_eps=1e-6, bos_token_id=None)
QWEN = dict(use_sliding_window=False, max_window_layers=3,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
FAMILIES = {
    "qwen2": (Qwen2Config, Qwen2ForCausalLM, dict(QWEN, head_dim=16, tie_word_embeddings=True)),
    "qwen3": (Qwen3Config, Qwen3ForCausalLM, dict(QWEN, head_dim=24, tie_word_embeddings=False, attention_bias=False)),
    "mistral": (MistralConfig, MistralForCausalLM, dict(head_dim=16, tie_word_embeddings=False, sliding_window=8,
                                                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    "phi3": (Phi3Config, Phi3ForCausalLM, dict(tie_word_embeddings=False, sliding_window=8,
                                               rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    # Llama 3.2's layout (tied embeddings, no biases) and its RoPE scaling (rope_type llama3), with
    # original_max_position_embeddings 64 so that the inputs' positions reach the scaled bands.
    "llama3": (LlamaConfig, LlamaForCausalLM, dict(head_dim=16, tie_word_embeddings=True, rope_parameters=LLAMA3_ROPE)),
    "gemma3": (Gemma3TextConfig, Gemma3ForCausalLM,
               dict(head_dim=24, query_pre_attn_scalar=20, tie_word_embeddings=True, sliding_window=8,
                    layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                    rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})),
}
# Gemma's RMSNorm scales by (1 + weight): its norm weights are drawn around 0; its embeddings are
# multiplied by sqrt(hidden_size), so they are drawn smaller.
NORM_CENTER = {"gemma3": 0.0}
EMBED_STD = {"gemma3": 0.3 / 8}


def train_tokenizer(text):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=384, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text], trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")


def redraw(model, generator, norm_center=1.0, embed_std=0.3):
    """Weights at scales where each matters: linear std 0.8/sqrt(fan_in), biases std 0.5,
    embeddings std embed_std, norm weights norm_center + 0.1 N(0, 1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            if name.endswith("norm.weight"):
                p.copy_(norm_center + 0.1 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.5 * noise)
            elif "embed_tokens" in name:
                p.copy_(embed_std * noise)
            else:
                p.copy_(noise * 0.8 / p.shape[1] ** 0.5)


def write_family(name, tokenizer, wiki_lines):
    config_class, model_class, extra = FAMILIES[name]
    config = config_class(vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id,
                          pad_token_id=tokenizer.pad_token_id, **SIZES, **extra)
    torch.manual_seed(0)
    model = model_class(config)
    redraw(model, torch.Generator().manual_seed(1), NORM_CENTER.get(name, 1.0), EMBED_STD.get(name, 0.3))
    model = model.eval()
    out = FIXTURES / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)  # HF generate() defaults only
    # RoPE as the families' own config.json files write it (top-level rope_theta), which
    # transformers 4.x reads too; 5.x's save writes rope_parameters, which 4.x ignores (Phi-3's
    # also holds partial_rotary_factor 1.0, the default).
    written = json.loads((out / "config.json").read_text())
    rope = written.pop("rope_parameters")
    if "full_attention" in rope:  # Gemma 3's config.json: rope_theta and rope_local_base_freq
        written["rope_theta"] = rope["full_attention"]["rope_theta"]
        written["rope_local_base_freq"] = rope["sliding_attention"]["rope_theta"]
    elif rope.get("rope_type") == "llama3":  # Llama 3.2's config.json: rope_theta and rope_scaling
        written["rope_theta"] = rope.pop("rope_theta")
        written["rope_scaling"] = rope
    else:
        written["rope_theta"] = rope["rope_theta"]
    (out / "config.json").write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")
    tokenizer.save_pretrained(out)

    batch = tokenizer([wiki_lines[0][:90], wiki_lines[1][:60]], return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        prompt = tokenizer("The king said", return_tensors="pt")["input_ids"]
        greedy = model.generate(prompt, max_new_tokens=16, do_sample=False, pad_token_id=tokenizer.pad_token_id,
                                eos_token_id=None)
    save_file({"input_ids": batch["input_ids"].contiguous(), "attention_mask": batch["attention_mask"].contiguous(),
               "logits": logits.float().contiguous(), "prompt_ids": prompt[0].contiguous(),
               "greedy_ids": greedy[0].contiguous()},
              str(out / "reference.safetensors"),
              metadata={"transformers": transformers.__version__, "torch": torch.__version__})
    print(json.dumps({"folder": str(out.relative_to(REPO)), "vocab": len(tokenizer),
                      "tokens": list(batch["input_ids"].shape), "logit_std": float(logits.std()),
                      "greedy": greedy[0].tolist()}))


def main():
    text_file = SHARED / "corpus" / "tinyshakespeare_input.txt"
    wiki_file = SHARED / "corpus" / "wikitext2_raw_test.raw"
    if not text_file.is_file() or not wiki_file.is_file():
        sys.exit(f"make_decoder_fixtures: {SHARED}/corpus not found (set HEADPRUNE_SHARED_DATA)")
    tokenizer = train_tokenizer(text_file.read_text(encoding="utf-8")[:300_000])
    lines = [l.strip() for l in wiki_file.read_text(encoding="utf-8").splitlines() if len(l.strip()) > 80]
    names = sys.argv[1:] or list(FAMILIES)
    for name in names:
        if name not in FAMILIES:
            sys.exit(f"make_decoder_fixtures: unknown family {name!r} (known: {', '.join(FAMILIES)})")
        write_family(name, tokenizer, lines)


if __name__ == "__main__":
    main()
