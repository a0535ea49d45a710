#!/usr/bin/env python3
"""Writes tests/fixtures/stories260K/tokens.json: reference token ids for the stories260K
tokenizer from SentencePiece itself (tok512.model), for headprune's llama2.c tokenizer
(tok512.bin) to match.

Needs only the `sentencepiece` package (0.2.0), e.g. in a small venv:
    python3 -m venv .venv-sp && .venv-sp/bin/pip install sentencepiece==0.2.0
    .venv-sp/bin/python tools/make_stories260k_tokens.py
Options: --model (default ../shared/data/stories260K/tok512.model, or $HEADPRUNE_SHARED_DATA),
--out (default tests/fixtures/stories260K/tokens.json). Never touches the network.
"""
import argparse
import json
import os
import sys

import sentencepiece as spm

TEXTS = [
    "Once upon a time, there was a little girl named Lily.",
    "She loved to play outside in the park.",
    "One day, she saw a big, red ball.",
    "Tom and Sam were friends. They liked to share toys!",
    "\"Can I have it?\" asked Ben. \"No,\" said Mom.",
    "The cat sat on the mat; the dog ran away...",
    "hello",
    "Hello World",
    "a",
    "",
    " ",
    "  two leading spaces",
    "trailing space ",
    "double  space   triple",
    "line one\nline two",
    "tab\there",
    "numbers 12345 and 3.14",
    "UPPERCASE WORDS",
    "café naïve résumé",
    "日本語のテキスト",
    "emoji 😀 and 🐱",
    "Straße und Größe",
    "Привет мир",
    "<s> and </s> as text",
    "<0x41> looks like a byte token",
    "it's a dog's life, isn't it?",
    "x" * 40,
    "supercalifragilisticexpialidocious",
    "The end.\n\n",
    "mixed: αβγ + ∑ ≠ ∞ € £",
]


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shared = os.environ.get("HEADPRUNE_SHARED_DATA", os.path.join(root, "..", "shared", "data"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(shared, "stories260K", "tok512.model"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "fixtures", "stories260K", "tokens.json"))
    args = ap.parse_args()
    sp = spm.SentencePieceProcessor(model_file=args.model)
    cases = [{"text": t, "ids": sp.encode(t), "pieces": sp.encode(t, out_type=str)} for t in TEXTS]
    doc = {
        "generator": f"tools/make_stories260k_tokens.py (sentencepiece {spm.__version__})",
        "model": "stories260K/tok512.model",
        "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(),
        "vocab_size": sp.vocab_size(),
        "note": "ids without BOS/EOS: SentencePieceProcessor.encode(text)",
        "cases": cases,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("{\n")
        head = {k: v for k, v in doc.items() if k != "cases"}
        for k, v in head.items():
            f.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
        f.write('  "cases": [\n')
        f.write(",\n".join("    " + json.dumps(c) for c in cases))
        f.write("\n  ]\n}\n")
    print(f"{len(cases)} cases written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
