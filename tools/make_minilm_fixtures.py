#!/usr/bin/env python3
"""Writes the all-MiniLM-L6-v2 reference fixtures for headprune's tokenizer and encoder tests.

Reference implementation: HF transformers / tokenizers / sentence-transformers, pinned in
tools/requirements-reference.txt and installed by tools/setup-reference-env. Run it with

    tools/setup-reference-env
    .venv-ref/bin/python tools/make_minilm_fixtures.py [--model DIR] [--out DIR]

Outputs (in --out, default tests/fixtures/minilm/):

  tokens.json           {"generator", "model", "max_length": 256, "embedding_dim": 384,
                         "attn_implementation", "batch_size", "cases": [{"text", "tokens",
                         "input_ids", "has_hidden", optional "slow_input_ids",
                         optional "st_input_ids"}]}
      tokens     word pieces, no special tokens: slow BertTokenizer(vocab.txt +
                 tokenizer_config.json).tokenize(text), never truncated
      input_ids  fast tokenizer (tokenizer.json), truncation=True, max_length=256, with
                 [CLS]/[SEP]
      slow_input_ids  only where the slow tokenizer disagrees with input_ids
      st_input_ids    only where sentence-transformers' own tokenization (it strips the text
                      first) disagrees with input_ids; embedding.{i} was computed from these
  reference.safetensors (float32 unless noted)
      hidden.{i}       [T_i, 384] BertModel last_hidden_state for case i alone, unpadded,
                       from input_ids (present only where has_hidden is true)
      embedding.{i}    [384] SentenceTransformer(model).encode(text, normalize_embeddings=False)
                       (the model's own pipeline ends in Normalize, so it is L2-normalised)
      batch.input_ids, batch.attention_mask  [8, T] int64: the first 8 cases, padding=True
      batch.hidden     [8, T, 384] last_hidden_state for that padded batch
      batch.layer.{l}  [4, T, 384] the output of layer l (0-based, l < 5: every layer but the
                       last) for the batch's first 4 rows: output_hidden_states=True's
                       hidden_states[l + 1]

Never needed at run time; only to regenerate the committed fixtures.
"""

import os

# The model is local; never touch the network.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import safetensors  # noqa: E402
import sentence_transformers  # noqa: E402
import tokenizers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from transformers import AutoModel, AutoTokenizer, BertTokenizer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MAX_LENGTH = 256
EMBEDDING_DIM = 384
BATCH_SIZE = 8
# A case with more tokens than this is "long"; only the first long case keeps its hidden state.
LONG_TOKENS = 128
MAX_SAFETENSORS_BYTES = 3 * 1024 * 1024
# Rows of the padded batch whose intermediate layers' outputs are kept.
LAYER_ROWS = 4

W100 = "hippopotomonstrosesquippedaliophobia" * 2 + "supercalifragilisticexpialid"
assert len(W100) == 100

PARAGRAPH = (
    "Multi-head attention lets a transformer attend to information from different "
    "representation subspaces at different positions. In practice, many of the heads in a "
    "trained model turn out to be redundant: researchers have shown that a large fraction of "
    "them can be removed at test time without a significant drop in accuracy, and that the "
    "remaining heads often specialise in recognisable linguistic roles. "
)

# The first BATCH_SIZE cases form the padded batch check: keep them short and of varied length.
CASES = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "",
    "Attention heads can often be pruned without hurting accuracy much.",
    "café naïve Müller Ångström São Paulo",
    "I can't believe it's already 3:45 p.m.!",
    "北京是中国的首都。",
    "Pruning 12 heads × 6 layers = 72 heads in total; we keep 40%.",
    # mixed case, whitespace
    "ThIs Is MiXeD CaSe TeXt WITH SHOUTING and whispering",
    "   \t  \n  ",
    "   leading and trailing spaces   ",
    "tabs\tbetween\twords\nnew line\r\nCRLF line\rCR only",
    # CJK
    "東京で日本語を勉強しています。ひらがなとカタカナも。",
    "서울은 대한민국의 수도입니다.",
    "Tokyo東京Seoul서울Moscowмосква",
    "Rare CJK extension B: 𠀀𠀁𠂉 and full-width Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    # emoji
    "I love pizza 🍕",
    "Family: 👨‍👩‍👧‍👦, rainbow flag 🏳️‍🌈, thumbs up 👍🏽",
    "Flags: 🇺🇸 🇯🇵 🇩🇪 🇧🇷",
    "Emoticons :-) :( ;-P <3 ¯\\_(ツ)_/¯",
    # punctuation
    "What?!!!??? No way... really -- yes—no – maybe",
    "“Curly double” ‘curly single’ «guillemets» „German“ ‹single›",
    "......!!!!!!!!???-----___***",
    # digits, URLs, emails
    "Pi is about 3.14159, e is 2.71828, 1,000,000 is a million; -42 and +7.5e-3 too.",
    "2024-03-15T10:30:00Z, 15/03/2024, March 15th, 1999; 3rd 21st 1990s COVID-19 v2.0.1",
    "Visit https://example.com/path?query=1&x=y#frag or http://www.test.org.",
    "Email me at john.doe+tag@example.co.uk or admin@localhost.",
    "#MachineLearning @user_123 is #1!!",
    # apostrophes, hyphens
    "Don't, won't, shouldn't've, y'all, rock 'n' roll, O'Neill's",
    "state-of-the-art well-known mother-in-law e-mail re-entry",
    # control and invisible characters
    "null\u0000char bell\x07 zero\u200bwidth replacement\ufffdchar",
    "soft\u00adhyphen non\u00a0breaking em\u2003space line\u2028separator",
    "private\ue000use and escape\x1b[0m and delete\x7f and bom\ufeffhere",
    # combining characters
    "e\u0301 vs \u00e9, n\u0303 vs \u00f1, a\u030a\u0301 stacked, z\u0336\u0317a\u0335l\u0334g\u0337o",
    "Tiếng Việt có nhiều dấu thanh: ả, ã, ạ, ặ, ổ",
    "Ligatures ﬁ ﬂ ﬀ, superscripts x² H₂O ½, ſ long s",
    # overlong words: 100 characters is still split, 101 becomes [UNK]
    "exactly " + W100 + " hundred",
    "one more " + W100 + "o than allowed",
    # other scripts
    "مرحبا بالعالم، كيف حالك؟",
    "שלום עולם, מה שלומך?",
    "Привет, мир! Как дела?",
    "Γειά σου Κόσμε! Καλημέρα.",
    "สวัสดีชาวโลก ภาษาไทย",
    "नमस्ते दुनिया, हिंदी भाषा",
    # math, currency
    "∀x ∈ ℝ: x² ≥ 0, ∑ᵢ aᵢ ≠ ∞, √2 ≈ 1.414, ∫ f(x) dx",
    "Prices: $5, €10, £7.50, ¥1000, ₹250, ₩5000, ₿0.01, 50¢",
    # special token strings as text
    "[CLS] hello [SEP]",
    "[MASK]",
    "The [MASK] sat on the mat.",
    "the [mask] token in lower case, and [UNK] [PAD] [Cls] as text",
    # rare words, code, markup
    "Sesquipedalian quixotic perspicacious obfuscation of abstruse lexicographical "
    "idiosyncrasies",
    "Methylenedioxymethamphetamine, acetylsalicylic acid and deoxyribonucleic acid",
    "def f(x): return x**2 + 1  # comment\nint main() { return 0; }",
    '<p class="x">Hello&nbsp;<b>world</b></p>',
    # single characters
    "a",
    "?",
    # long texts that truncate well past 256 tokens
    PARAGRAPH * 5,
    "机器学习是人工智能的一个分支，研究计算机如何从数据中学习。" * 12,
]


def versions():
    return {
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "sentence-transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "safetensors": safetensors.__version__,
        "numpy": np.__version__,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path,
                    help="sentence-transformers model folder "
                         "(default: <repo>/.cache/models/all-MiniLM-L6-v2)")
    ap.add_argument("--out", type=Path,
                    help="output folder (default: <repo>/tests/fixtures/minilm)")
    ap.add_argument("--strict", action="store_true",
                    help="also fail when the slow and fast tokenizers disagree (they are "
                         "otherwise recorded in tokens.json and reported loudly)")
    args = ap.parse_args()
    model_dir = args.model or REPO / ".cache/models/all-MiniLM-L6-v2"
    out_dir = args.out or REPO / "tests/fixtures/minilm"
    if not (model_dir / "config.json").is_file():
        sys.exit(f"make_minilm_fixtures: no model at {model_dir} (run scripts/fetch-model)")

    torch.set_num_threads(2)
    torch.manual_seed(0)
    vers = versions()
    generator = "tools/make_minilm_fixtures.py (" + ", ".join(
        f"{k} {v}" for k, v in vers.items()) + ")"
    print(f"make_minilm_fixtures: {generator}")
    print(f"make_minilm_fixtures: model {model_dir}, {len(CASES)} cases -> {out_dir}")

    slow = BertTokenizer.from_pretrained(str(model_dir))
    fast = AutoTokenizer.from_pretrained(str(model_dir))
    assert fast.is_fast, type(fast)
    model = AutoModel.from_pretrained(str(model_dir), torch_dtype=torch.float32).eval()
    attn_impl = getattr(model.config, "_attn_implementation", "unknown")
    st = SentenceTransformer(str(model_dir), device="cpu")
    st.eval()
    print(f"make_minilm_fixtures: {type(model).__name__} (attention: {attn_impl}), "
          f"slow {type(slow).__name__}, fast {type(fast).__name__}")
    print(f"make_minilm_fixtures: SentenceTransformer pipeline: "
          + " -> ".join(type(m).__name__ for m in st) + f", max_seq_length {st.max_seq_length}")

    # Report which limit AutoTokenizer uses when only truncation=True is given.
    probe = fast("hello " * 1000, truncation=True)["input_ids"]
    print(f"make_minilm_fixtures: AutoTokenizer with only truncation=True truncates to "
          f"{len(probe)} (model_max_length {fast.model_max_length}); fixtures pass max_length="
          f"{MAX_LENGTH} explicitly")

    tensors = {}
    cases = []
    problems = []  # fatal
    tok_diffs = []  # slow vs fast tokenizer disagreements: recorded, loud, fatal with --strict
    kept_long = False
    max_diff_pool = 0.0
    for i, text in enumerate(CASES):
        tokens = slow.tokenize(text)
        enc = fast(text, truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
        ids = enc["input_ids"][0].tolist()
        slow_ids = slow(text, truncation=True, max_length=MAX_LENGTH)["input_ids"]
        case = {"text": text, "tokens": tokens, "input_ids": ids}
        if slow_ids != ids:
            case["slow_input_ids"] = slow_ids
            tok_diffs.append(f"case {i}: slow and fast input_ids differ: {text!r}\n"
                            f"    fast {ids}\n    slow {slow_ids}")
        fast_tokens = fast.tokenize(text)
        if fast_tokens != tokens:
            tok_diffs.append(f"case {i}: slow and fast word pieces differ: {text!r}\n"
                            f"    fast {fast_tokens}\n    slow {tokens}")
        st_ids = st.tokenize([text])["input_ids"][0].tolist()
        if st_ids != ids:
            case["st_input_ids"] = st_ids
            print(f"make_minilm_fixtures: note: case {i}: sentence-transformers tokenizes "
                  f"{text!r} differently (it strips the text): {st_ids}")

        is_long = len(ids) > LONG_TOKENS
        has_hidden = not (is_long and kept_long)
        kept_long = kept_long or is_long
        case["has_hidden"] = has_hidden

        with torch.no_grad():
            hidden = model(**enc).last_hidden_state[0]
        assert hidden.shape == (len(ids), EMBEDDING_DIM), hidden.shape
        if has_hidden:
            tensors[f"hidden.{i}"] = hidden.numpy().astype(np.float32)
        emb = st.encode(text, normalize_embeddings=False, convert_to_numpy=True)
        assert emb.shape == (EMBEDDING_DIM,), emb.shape
        tensors[f"embedding.{i}"] = emb.astype(np.float32)
        norm = float(np.linalg.norm(emb))
        if abs(norm - 1.0) > 1e-4:
            problems.append(f"case {i}: embedding norm {norm}, expected 1")
        if "st_input_ids" not in case:
            # Cross-check: mean pooling of our hidden state, L2-normalised, is the embedding.
            pooled = hidden.mean(0)
            pooled = (pooled / pooled.norm()).numpy()
            diff = float(np.abs(pooled - emb).max())
            max_diff_pool = max(max_diff_pool, diff)
            if diff > 1e-5:
                problems.append(f"case {i}: normalised mean of hidden differs from the "
                                f"sentence-transformers embedding by {diff}")
        cases.append(case)

    # Padded batch of the first BATCH_SIZE cases.
    batch_texts = CASES[:BATCH_SIZE]
    benc = fast(batch_texts, padding=True, truncation=True, max_length=MAX_LENGTH,
                return_tensors="pt")
    with torch.no_grad():
        bout = model(**benc, output_hidden_states=True)
    bhidden = bout.last_hidden_state
    tensors["batch.input_ids"] = benc["input_ids"].numpy().astype(np.int64)
    tensors["batch.attention_mask"] = benc["attention_mask"].numpy().astype(np.int64)
    tensors["batch.hidden"] = bhidden.numpy().astype(np.float32)
    # hidden_states[0] is the embeddings' output; [l] the output of layer l (1-based); the
    # last equals last_hidden_state. The intermediate layers, first LAYER_ROWS rows (size budget).
    assert torch.equal(bout.hidden_states[-1], bhidden)
    for layer in range(1, len(bout.hidden_states) - 1):
        tensors[f"batch.layer.{layer - 1}"] = (
            bout.hidden_states[layer][:LAYER_ROWS].numpy().astype(np.float32))
    max_diff_batch = 0.0
    for b in range(BATCH_SIZE):
        n = len(cases[b]["input_ids"])
        assert benc["input_ids"][b, :n].tolist() == cases[b]["input_ids"]
        assert int(benc["attention_mask"][b].sum()) == n
        max_diff_batch = max(max_diff_batch, float(np.abs(
            bhidden[b, :n].numpy() - tensors[f"hidden.{b}"]).max()))
    if max_diff_batch > 1e-4:
        problems.append(f"padded batch differs from the single-sentence hidden states by "
                        f"{max_diff_batch}")

    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "generator": generator,
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "max_length": MAX_LENGTH,
        "embedding_dim": EMBEDDING_DIM,
        "attn_implementation": attn_impl,
        "batch_size": BATCH_SIZE,
        "cases": cases,
    }
    # One case per line: small, diffable; ensure_ascii keeps invisible characters visible.
    lines = [json.dumps({k: v for k, v in doc.items() if k != "cases"}, ensure_ascii=True)[:-1]
             + ', "cases": [']
    lines += ["  " + json.dumps(c, ensure_ascii=True) + ("," if k + 1 < len(cases) else "")
              for k, c in enumerate(cases)]
    lines.append("]}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == doc
    (out_dir / "tokens.json").write_text(text, encoding="ascii")
    save_file(tensors, str(out_dir / "reference.safetensors"),
              metadata={"generator": generator})  # one key: the header is then byte-stable

    sizes = {p: (out_dir / p).stat().st_size for p in ("tokens.json", "reference.safetensors")}
    n_hidden = sum(c["has_hidden"] for c in cases)
    n_trunc = sum(len(c["input_ids"]) == MAX_LENGTH for c in cases)
    n_unk = sum(slow.unk_token_id in c["input_ids"] for c in cases)
    n_st = sum("st_input_ids" in c for c in cases)
    print(f"make_minilm_fixtures: {len(cases)} cases; {n_hidden} with hidden states; "
          f"{n_trunc} truncated to {MAX_LENGTH}; {n_unk} containing [UNK]; "
          f"{n_st} tokenized differently by sentence-transformers")
    print(f"make_minilm_fixtures: batch of {BATCH_SIZE} padded to "
          f"{tensors['batch.input_ids'].shape[1]}, max |batch - single| = {max_diff_batch:.3g}; "
          f"max |normalised mean(hidden) - embedding| = {max_diff_pool:.3g}")
    for p, s in sizes.items():
        print(f"make_minilm_fixtures: wrote {out_dir / p} ({s} bytes)")
    if sizes["reference.safetensors"] > MAX_SAFETENSORS_BYTES:
        problems.append(f"reference.safetensors is {sizes['reference.safetensors']} bytes, "
                        f"over the {MAX_SAFETENSORS_BYTES} budget")
    if tok_diffs:
        print("\n" + "!" * 78, file=sys.stderr)
        print(f"make_minilm_fixtures: SLOW AND FAST TOKENIZERS DISAGREE on {len(tok_diffs)} "
              f"case(s) (fast ids are the fixture; slow ids are in \"slow_input_ids\"):",
              file=sys.stderr)
        for p in tok_diffs:
            print("  " + p, file=sys.stderr)
        print("!" * 78, file=sys.stderr)
        if args.strict:
            problems.append("slow/fast tokenizer disagreement (--strict)")
    else:
        print("make_minilm_fixtures: slow and fast tokenizers agree on every case")
    if problems:
        print("\n" + "!" * 78, file=sys.stderr)
        print(f"make_minilm_fixtures: {len(problems)} PROBLEM(S):", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        print("!" * 78, file=sys.stderr)
        sys.exit(1)
    print("make_minilm_fixtures: all checks pass")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        main()
