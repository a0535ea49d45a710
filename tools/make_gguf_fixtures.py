"""Writes the GGUF test fixtures (tests/fixtures/gguf/) with llama.cpp's own `gguf` package.

Run from the repository root with the pinned environment (tools/setup-reference-env --current):
    .venv-current/bin/python tools/make_gguf_fixtures.py

1. quants.gguf + quants_reference.safetensors: one [2, 512] tensor per ggml type headprune
   dequantises (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K), with gguf-py's
   `quants.dequantize` of the same bytes as the float32 reference. Types gguf-py quantises are
   quantised from N(0, 1) data; for the K-quants (which it only dequantises) the blocks are random
   bytes with finite half-precision super-block scales.
2. tiny-llama.gguf + tiny-llama_reference.safetensors: a random LlamaForCausalLM (2 layers,
   hidden 64, 4 query heads sharing 2 KV heads, tied embeddings) written as llama.cpp's
   convert_hf_to_gguf.py writes it (q/k rows permuted to interleaved rotary pairs; norms F32,
   attention F16, MLP Q8_0), and transformers' logits when it loads that GGUF file itself
   (`from_pretrained(..., gguf_file=...)`) on fixed token ids.
"""
import os
import sys

import numpy as np
import torch
from gguf import GGMLQuantizationType as T, GGUFWriter, quants
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import save_file as save_torch

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "gguf")
SHAPE = (2, 512)
QUANTISABLE = [T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1]
K_QUANTS = [T.Q4_K, T.Q5_K, T.Q6_K]
# Byte offsets of the f16 super-block scales in each K-quant block (ggml-common.h).
K_SCALE_OFFSETS = {T.Q4_K: (0, 2), T.Q5_K: (0, 2), T.Q6_K: (208,)}


def k_quant_bytes(rng, qtype):
    block, size = quants.GGML_QUANT_SIZES[qtype]
    n_blocks = SHAPE[0] * SHAPE[1] // block
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    for off in K_SCALE_OFFSETS[qtype]:
        scales = rng.uniform(0.001, 0.05, size=n_blocks).astype(np.float16)
        raw[:, off:off + 2] = scales.view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(SHAPE[0], SHAPE[1] // block * size)


def write_quants(rng):
    writer = GGUFWriter(os.path.join(OUT, "quants.gguf"), arch="quants-test")
    reference = {}
    for qtype in QUANTISABLE + K_QUANTS:
        if qtype in K_QUANTS:
            raw = k_quant_bytes(rng, qtype)
        else:
            raw = quants.quantize(rng.standard_normal(SHAPE).astype(np.float32), qtype)
        reference[qtype.name] = quants.dequantize(raw, qtype).astype(np.float32).reshape(SHAPE)
        writer.add_tensor(qtype.name, raw, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    save_numpy(reference, os.path.join(OUT, "quants_reference.safetensors"))


def permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: rotate-half rows -> interleaved pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


TINY = dict(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
            rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True)
GGUF_NAMES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
              "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down"}


def gguf_tensor(name, w):
    """(GGUF name, data, type): norms F32, attention F16, MLP and embeddings Q8_0."""
    if name == "model.embed_tokens.weight":
        return "token_embd.weight", quants.quantize(w, T.Q8_0), T.Q8_0
    if name == "model.norm.weight":
        return "output_norm.weight", w, T.F32
    layer, rest = name[len("model.layers."):].split(".", 1)
    module = rest[: -len(".weight")]
    if module == "self_attn.q_proj":
        w = permute(w, TINY["num_attention_heads"])
    if module == "self_attn.k_proj":
        w = permute(w, TINY["num_key_value_heads"])
    gname = f"blk.{layer}.{GGUF_NAMES[module]}.weight"
    if module.endswith("layernorm"):
        return gname, w, T.F32
    if module.startswith("self_attn"):
        return gname, w.astype(np.float16), T.F16
    return gname, quants.quantize(w, T.Q8_0), T.Q8_0


def write_tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**TINY)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)  # norms away from 1 so that a missed norm shows
            elif "q_proj" in name or "k_proj" in name:
                p.normal_(0.0, 0.4)  # peaked attention, so that a wrong q/k row order shows
            else:
                p.normal_(0.0, 0.15)
    path = os.path.join(OUT, "tiny-llama.gguf")
    writer = GGUFWriter(path, arch="llama")
    writer.add_block_count(TINY["num_hidden_layers"])
    writer.add_context_length(TINY["max_position_embeddings"])
    writer.add_embedding_length(TINY["hidden_size"])
    writer.add_feed_forward_length(TINY["intermediate_size"])
    writer.add_head_count(TINY["num_attention_heads"])
    writer.add_head_count_kv(TINY["num_key_value_heads"])
    writer.add_rope_freq_base(TINY["rope_theta"])
    writer.add_layer_norm_rms_eps(TINY["rms_norm_eps"])
    writer.add_rope_dimension_count(TINY["hidden_size"] // TINY["num_attention_heads"])
    writer.add_vocab_size(TINY["vocab_size"])
    for name, p in model.state_dict().items():
        if name == "lm_head.weight":
            continue  # tied
        gname, data, qtype = gguf_tensor(name, p.numpy())
        writer.add_tensor(gname, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    loaded = LlamaForCausalLM.from_pretrained(OUT, gguf_file="tiny-llama.gguf", torch_dtype=torch.float32).eval()
    ids = torch.tensor([[1, 17, 200, 3, 99, 45, 128, 7, 255, 0, 64, 12]])
    with torch.no_grad():
        logits = loaded(ids).logits[0]
    with torch.no_grad():  # what a reader that forgot to undo the permutation would compute
        for layer in loaded.model.layers:
            layer.self_attn.q_proj.weight.copy_(permute(layer.self_attn.q_proj.weight, TINY["num_attention_heads"]))
            layer.self_attn.k_proj.weight.copy_(permute(layer.self_attn.k_proj.weight, TINY["num_key_value_heads"]))
        unpermuted = loaded(ids).logits[0]
    print("tiny-llama: max |logit change| if q/k stayed permuted:", float((unpermuted - logits).abs().max()))
    save_torch({"input_ids": ids[0].contiguous(), "logits": logits.contiguous()},
               os.path.join(OUT, "tiny-llama_reference.safetensors"))
    print("tiny-llama: logits scale", float(logits.abs().max()))


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(2026)
    write_quants(rng)
    write_tiny_llama()
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)))


if __name__ == "__main__":
    sys.exit(main())
