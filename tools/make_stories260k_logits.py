#!/usr/bin/env python3
"""Writes tests/fixtures/stories260K/reference.safetensors: HF transformers LlamaForCausalLM
logits for the real stories260K model (llama2.c stories260K.bin), for headprune's LlamaModel to
match.

The .bin is converted here independently of headprune (numpy; q/k rows permuted from llama2.c's
interleaved rotary pairs to HF's rotate_half order as transformers'
convert_llama_weights_to_hf.py does), loaded into LlamaForCausalLM (eager attention, float32,
CPU), and run on token sequences taken from tests/fixtures/stories260K/tokens.json (BOS + ids).

    .venv-ref/bin/python tools/make_stories260k_logits.py
    .venv-ref/bin/python tools/make_stories260k_logits.py --converted DIR   # interop check

With --converted DIR (a folder written by `headprune convert-llama2c`), it also loads that
folder with LlamaForCausalLM.from_pretrained, fails on missing/unexpected/mismatched keys, and
compares its logits with this script's own conversion (max |diff| <= 1e-5), then exits without
writing. Never touches the network.
"""
import argparse
import json
import os
import struct
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402


def read_llama2c(path):
    data = open(path, "rb").read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = struct.unpack("<7i", data[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    head = dim // n_heads
    kv_dim = n_kv * head
    arr = np.frombuffer(data, dtype="<f4", offset=28)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        out = torch.from_numpy(arr[pos:pos + n].copy()).reshape(shape)
        pos += n
        return out

    def permute(w, heads):  # interleaved pairs -> halves, per head
        return w.view(heads, head // 2, 2, w.shape[1]).transpose(1, 2).reshape(w.shape)

    # Tensors of one kind are stored for all layers together (layer-major within a kind).
    sd = {"model.embed_tokens.weight": take(vocab, dim)}
    for name, shape, fix in [
        ("input_layernorm", (dim,), None),
        ("self_attn.q_proj", (dim, dim), n_heads),
        ("self_attn.k_proj", (kv_dim, dim), n_kv),
        ("self_attn.v_proj", (kv_dim, dim), None),
        ("self_attn.o_proj", (dim, dim), None),
        ("post_attention_layernorm", (dim,), None),
        ("mlp.gate_proj", (hidden, dim), None),
        ("mlp.down_proj", (dim, hidden), None),
        ("mlp.up_proj", (hidden, dim), None),
    ]:
        for layer in range(n_layers):
            w = take(*shape)
            sd[f"model.layers.{layer}.{name}.weight"] = permute(w, fix) if fix else w
    sd["model.norm.weight"] = take(dim)
    take(seq_len, head // 2)
    take(seq_len, head // 2)
    if not shared:
        sd["lm_head.weight"] = take(vocab, dim)
    assert pos == arr.size, f"{path}: {arr.size - pos} floats left over"
    config = LlamaConfig(vocab_size=vocab, hidden_size=dim, intermediate_size=hidden,
                         num_hidden_layers=n_layers, num_attention_heads=n_heads,
                         num_key_value_heads=n_kv, head_dim=head, max_position_embeddings=seq_len,
                         rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=shared,
                         bos_token_id=1, eos_token_id=2, attn_implementation="eager")
    model = LlamaForCausalLM(config)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if not (shared and k == "lm_head.weight")]
    assert not missing and not unexpected, (missing, unexpected)
    if shared:
        model.tie_weights()
    return model.eval()


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shared = os.environ.get("HEADPRUNE_SHARED_DATA", os.path.join(root, "..", "shared", "data"))
    fixtures = os.path.join(root, "tests", "fixtures", "stories260K")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(shared, "stories260K", "stories260K.bin"))
    ap.add_argument("--tokens", default=os.path.join(fixtures, "tokens.json"))
    ap.add_argument("--out", default=os.path.join(fixtures, "reference.safetensors"))
    ap.add_argument("--converted", help="a headprune convert-llama2c folder to check instead")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = read_llama2c(args.bin)
    cases = json.load(open(args.tokens, encoding="utf-8"))["cases"]

    # One long sequence alone, and a right-padded batch of two (positions 0..T-1 in each row).
    single = [1] + cases[0]["ids"]
    row_a = [1] + cases[2]["ids"][:11]
    row_b = [1] + cases[6]["ids"] + cases[7]["ids"]
    T = max(len(row_a), len(row_b))
    batch_ids = torch.zeros(2, T, dtype=torch.long)
    batch_mask = torch.zeros(2, T, dtype=torch.long)
    for r, row in enumerate([row_a, row_b]):
        batch_ids[r, :len(row)] = torch.tensor(row)
        batch_mask[r, :len(row)] = 1
    with torch.no_grad():
        single_ids = torch.tensor([single])
        single_logits = model(input_ids=single_ids).logits[0]
        batch_logits = model(input_ids=batch_ids, attention_mask=batch_mask).logits
        alone = model(input_ids=torch.tensor([row_b])).logits[0]
        pad_diff = (batch_logits[1, :len(row_b)] - alone).abs().max().item()
        assert pad_diff <= 1e-4, f"padded row differs from the row alone by {pad_diff}"

    if args.converted:
        other, info = LlamaForCausalLM.from_pretrained(args.converted, output_loading_info=True,
                                                       attn_implementation="eager")
        problems = {k: v for k, v in info.items() if v}
        if problems:
            print(f"{args.converted}: loading problems {problems}", file=sys.stderr)
            return 1
        with torch.no_grad():
            diff = (other.eval()(input_ids=single_ids).logits[0] - single_logits).abs().max().item()
        print(f"{args.converted}: max |logit diff| vs this script's conversion = {diff:.3g}")
        return 0 if diff <= 1e-5 else 1

    tensors = {
        "single.input_ids": single_ids[0].contiguous(),
        "single.logits": single_logits.contiguous(),
        "batch.input_ids": batch_ids.contiguous(),
        "batch.attention_mask": batch_mask.contiguous(),
        "batch.logits": batch_logits.contiguous(),
    }
    save_file(tensors, args.out, metadata={
        "generator": f"tools/make_stories260k_logits.py (torch {torch.__version__}, "
                     f"transformers {transformers.__version__}, eager attention, float32, CPU)"})
    size = os.path.getsize(args.out)
    assert size < 200_000, f"{args.out} is {size} bytes"
    print(f"written {args.out} ({size} bytes); padded vs alone max diff {pad_diff:.3g}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
