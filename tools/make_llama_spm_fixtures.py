"""Writes the LLaMA-style SentencePiece tokenizer fixtures of tests/spm_tokenizer_test.cpp
("[llama-spm]") into tests/fixtures/mistral_tokenizer/.

The vocabulary is real: Mistral 7B v0.1's SentencePiece model (32,000 pieces), shipped on PyPI
inside the mistral-common wheel (mistral_common/data/tokenizer.model.v1). transformers'
LlamaConverter turns it into the tokenizer.json that Mistral 7B, LLaMA 2 and Phi-3 publish:
byte-fallback BPE, and either the legacy pipeline (normalizer Prepend("▁") + Replace(" ", "▁"))
or the non-legacy one (no normalizer; Metaspace pre-tokenizer, prepend_scheme "first"), both
with the Replace + ByteFallback + Fuse + Strip(" ", 1, 0) decoder. Run from the repository root
in a scratch environment (the converter needs sentencepiece and protobuf, which the reference
environments do not carry):

    python3 -m venv /tmp/spm && /tmp/spm/bin/pip install transformers==4.46.3 sentencepiece protobuf gguf
    /tmp/spm/bin/pip download --no-deps mistral-common==1.13.1 -d /tmp/spm-wheel
    /tmp/spm/bin/python tools/make_llama_spm_fixtures.py /tmp/spm-wheel/mistral_common-1.13.1-py3-none-any.whl

Writes:
  tokenizer.json         the legacy tokenizer.json (compact JSON: 1.4 MB)
  tokenizer_config.json  as transformers saved it
  encodings.json         {"non_legacy": the normalizer / pre_tokenizer of the non-legacy file,
                          "cases": [{"text", "legacy", "non_legacy": {"ids", "decoded",
                          "decoded_skip"}}]}: `tokenizer(text)` ids (BOS first) and
                          `decode(ids, skip_special_tokens=False/True)` of each pipeline, computed
                          by the `tokenizers` library on the saved files
"""
import json
import pathlib
import sys
import tempfile
import zipfile

from tokenizers import Tokenizer
from transformers import LlamaTokenizerFast

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_bpe_fixtures import texts as bpe_texts  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "mistral_tokenizer"
WIKITEXT = ROOT.parent / "shared" / "data" / "corpus" / "wikitext2_raw_test.raw"
MODEL = "mistral_common/data/tokenizer.model.v1"


def texts():
    llama = [
        "[INST] What is the capital of France? [/INST]", "<s>[INST] hi [/INST] Hello</s>", "<s>", "</s>",
        "<unk>", "a<s>b", "a <s> b", "a  <s>  b", "<s> leading", "trailing </s>", " one leading space",
        "  two leading spaces", "\nnewline first", "▁already▁metaspace", "▁", "▁▁ ▁", "tab\tand\nnewline",
        "rare: 𓀀 𒀀 ꙮ 𝕏 🜁", "control \x01\x02 bytes", "ཀྵ 각", "Ω Ω Å",
    ]
    lines = [line.strip() for line in WIKITEXT.read_text(encoding="utf-8").splitlines()]
    wiki = [line for line in lines if len(line) > 40][:24]
    return bpe_texts() + llama + wiki


def encodings(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=True).ids
    return {"ids": ids, "decoded": tokenizer.decode(ids, skip_special_tokens=False),
            "decoded_skip": tokenizer.decode(ids, skip_special_tokens=True)}


def main():
    with zipfile.ZipFile(sys.argv[1]) as wheel, tempfile.TemporaryDirectory() as tmp:
        model = pathlib.Path(tmp) / "tokenizer.model"
        model.write_bytes(wheel.read(MODEL))
        saved = {}
        for legacy in (True, False):
            folder = pathlib.Path(tmp) / f"legacy-{legacy}"
            LlamaTokenizerFast(vocab_file=str(model), legacy=legacy, from_slow=True,
                               add_prefix_space=True).save_pretrained(folder)
            saved[legacy] = folder
        legacy_json = json.loads((saved[True] / "tokenizer.json").read_text(encoding="utf-8"))
        new_json = json.loads((saved[False] / "tokenizer.json").read_text(encoding="utf-8"))
        # The two files differ only in normalizer and pre_tokenizer: the test derives one from the other.
        assert {k: v for k, v in legacy_json.items() if k not in ("normalizer", "pre_tokenizer")} == \
               {k: v for k, v in new_json.items() if k not in ("normalizer", "pre_tokenizer")}
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "tokenizer.json").write_text(json.dumps(legacy_json, ensure_ascii=False, separators=(",", ":")),
                                            encoding="utf-8")
        (OUT / "tokenizer_config.json").write_bytes((saved[True] / "tokenizer_config.json").read_bytes())
        reference = {True: Tokenizer.from_file(str(saved[True] / "tokenizer.json")),
                     False: Tokenizer.from_file(str(saved[False] / "tokenizer.json"))}
    all_texts = texts()
    assert len(set(all_texts)) == len(all_texts), "duplicate fixture text"
    cases = [{"text": t, "legacy": encodings(reference[True], t), "non_legacy": encodings(reference[False], t)}
             for t in all_texts]
    out = {"non_legacy": {"normalizer": new_json["normalizer"], "pre_tokenizer": new_json["pre_tokenizer"]},
           "cases": cases}
    (OUT / "encodings.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    fallback = sum(1 for c in cases for i in c["legacy"]["ids"] if 3 <= i < 259)
    differ = sum(1 for c in cases if c["legacy"]["ids"] != c["non_legacy"]["ids"])
    print(f"{OUT}: {len(cases)} texts, {fallback} byte-fallback ids (legacy), {differ} texts whose ids differ "
          f"between the pipelines")


if __name__ == "__main__":
    main()
