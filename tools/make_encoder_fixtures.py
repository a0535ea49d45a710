"""Writes tests/fixtures/{distilbert,mpnet,mpnet_tokenizer,roberta,xlm_roberta}/: small encoders
made and saved by transformers itself and their reference outputs, and the real all-mpnet-base-v2
tokenizer's ids, for headprune to match; and the Unigram fuzz seeds.

roberta: transformers' own RobertaModel (3 layers, hidden 64, 4 heads, 162 positions, one token
type), a 600-token byte-level BPE vocabulary trained on Tiny Shakespeare as RobertaTokenizer
(RobertaProcessing), the reference on two WikiText-2 lines of 141 / 45 tokens (positions near the
table's end; the shorter padded), and encodings.json: the ids of 60 more lines and edge texts.

xlm_roberta: XLMRobertaModel of the same shape over a SentencePiece Unigram vocabulary (3,000
pieces, nmt_nfkc rules, fairseq's <unk>/<s>/</s> layout) that sentencepiece trains on every other
line of Debian's fortunes in nine languages (apt-get install fortunes-de fortunes-es fortunes-it
fortunes-ru fortunes-cs fortunes-pl fortunes-bg fortunes-br fortunes-zh) plus WikiText-2,
converted by transformers' XLMRobertaConverter; encodings.json holds the ids of 301 held-out
lines and hard cases. Needs `pip install sentencepiece` in the venv (not in the requirements:
only these files need it).

unigram_fuzz_seeds: tests/fuzz/corpus/unigram_tokenizer_json/, two small XLM-R-style
tokenizer.json files (a charsmap of eight rules; the older Metaspace without a normalizer).

mpnet: transformers' own MPNetModel (MPNetConfig: 3 layers, hidden 64, 4 heads, intermediate
128, 130 positions, 32 relative-position buckets; seeded, redrawn as below; the relative bias
table at std 1, so each head's bias visibly moves its scores) with a WordPiece vocabulary trained
as below around MPNet's special tokens (<s> <pad> </s> <unk> [UNK] <mask>, MPNetTokenizer); its
reference is two WikiText-2 lines of ~100 tokens (distances up to the log-spaced buckets), the
shorter padded with <pad> (id 1, whose position stays padding_idx).

mpnet_tokenizer: the tokenizer files of the real all-mpnet-base-v2 (scripts/fetch-model
all-mpnet-base-v2: vocab.txt, tokenizer.json with its normalized added token "<unk>",
tokenizer_config.json, special_tokens_map.json) and encodings.json: the ids its fast tokenizer
(what sentence-transformers runs) gives 120 WikiText-2 lines and texts naming its added and
special tokens.

distilbert:
No DistilBERT checkpoint is packaged on PyPI (the `env` package lists), so the model is
transformers' own DistilBertModel (DistilBertConfig, seeded random weights) saved with
save_pretrained as safetensors, as sentence-transformers saves the encoder of a DistilBERT
sentence model:
  * 3 layers, dim 64, 4 heads of 16, hidden_dim 128, gelu, 128 positions;
  * weights redrawn at scales that make every part matter (HF initialises biases to zero and
    LayerNorms to one, under which a wrong bias or norm would be invisible);
  * a WordPiece vocabulary trained here with the `tokenizers` library on Tiny Shakespeare
    (../shared/data/corpus), saved as DistilBertTokenizerFast (BERT's pipeline: BertNormalizer
    lower-casing, BertPreTokenizer, "##" continuation, [CLS] ... [SEP]).

reference.safetensors holds, from transformers (eager attention, float32, CPU): input_ids and
attention_mask [2, T] of the two WikiText-2 lines in texts.json (the shorter padded on the
right) and last_hidden_state [2, T, 64].

    .venv-current/bin/python tools/make_encoder_fixtures.py [distilbert|mpnet|mpnet_tokenizer|roberta|
                                                             xlm_roberta|unigram_fuzz_seeds ...]

Never touches the network.
"""
import io
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
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import (AutoConfig, AutoModel, AutoTokenizer, DistilBertConfig,  # noqa: E402
                          DistilBertForSequenceClassification, DistilBertModel, DistilBertTokenizerFast,
                          ModernBertConfig, ModernBertForSequenceClassification, ModernBertModel, MPNetConfig, MPNetForSequenceClassification,
                          MPNetModel, MPNetTokenizerFast, PreTrainedTokenizerFast,
                          RobertaConfig, RobertaForSequenceClassification, RobertaModel, RobertaTokenizer,
                          XLMRobertaConfig, XLMRobertaForSequenceClassification, XLMRobertaModel,
                          XLMRobertaTokenizer)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
SHARED = Path(os.environ.get("HEADPRUNE_SHARED_DATA") or REPO.parent / "shared" / "data")
BERT_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIAL = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # roberta-base's ids 0..3, then <mask>
# Texts where added tokens, spaces and non-ASCII meet the pipeline.
TOKENIZER_EDGES = ["<unk>", "a <mask> b", "a<mask>b", "  <mask>  two spaces", "<s> both </s> ends",
                   "<pad><pad>", "Café naïve 中文 — “quotes” 🙂", "tabs\tand\nnewlines", "   ", "", "x" * 40]
MPNET_SPECIAL = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>"]  # all-mpnet-base-v2's ids 0..3, 104, 30526


def train_wordpiece(text, special):
    """BERT's pipeline over a 600-token vocabulary, the special tokens first."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=600, special_tokens=special, show_progress=False)
    tok.train_from_iterator([text], trainer=trainer)
    return tok.get_vocab()


def train_byte_level_bpe(text, special, tokenizer=False):
    """RoBERTa's pipeline (ByteLevel without a prefix space) over a 600-token vocabulary, the
    special tokens first: (vocab, merges)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=special, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text], trainer=trainer)
    if tokenizer:
        return tok
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]


def save_encodings(tokenizer, texts, out):
    """encodings.json: the ids `tokenizer` gives each text (special tokens added, max 512)."""
    cases = [{"text": t, "ids": tokenizer(t, truncation=True, max_length=512)["input_ids"]} for t in texts]
    (out / "encodings.json").write_text(json.dumps({"tokenizer": type(tokenizer).__name__,
                                                    "transformers": transformers.__version__,
                                                    "cases": cases}, ensure_ascii=False) + "\n", encoding="utf-8")
    return cases


def redraw(model, generator, skip=None):
    """Linear std 0.8/sqrt(fan_in), biases std 0.5, embeddings std 0.3, LayerNorm weights
    1 + 0.1 N(0, 1); parameters whose name starts with `skip` are left as they are."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if skip and name.startswith(skip):
                continue
            noise = torch.randn(p.shape, generator=generator)
            if "norm" in name.lower() and name.endswith(".weight"):
                p.copy_(1.0 + 0.1 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.5 * noise)
            elif "embeddings" in name:
                p.copy_(0.3 * noise)
            else:
                p.copy_(noise * 0.8 / p.shape[1] ** 0.5)


def save_reference(model, tokenizer, texts, out):
    """texts.json and reference.safetensors (ids, mask, last_hidden_state) beside the model."""
    (out / "texts.json").write_text(json.dumps(texts, indent=2) + "\n", encoding="utf-8")
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    save_file({"input_ids": batch["input_ids"].contiguous(), "attention_mask": batch["attention_mask"].contiguous(),
               "last_hidden_state": hidden.float().contiguous()},
              str(out / "reference.safetensors"),
              metadata={"transformers": transformers.__version__, "torch": torch.__version__})
    print(json.dumps({"folder": str(out.relative_to(REPO)), "vocab": len(tokenizer),
                      "tokens": list(batch["input_ids"].shape), "hidden_std": float(hidden.std())}))


def fresh(name):
    out = FIXTURES / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out


def write_distilbert(corpus, lines):
    out = fresh("distilbert")
    tokenizer = DistilBertTokenizerFast(vocab=train_wordpiece(corpus, BERT_SPECIAL), do_lower_case=True)
    config = DistilBertConfig(vocab_size=len(tokenizer), dim=64, n_layers=3, n_heads=4, hidden_dim=128,
                              max_position_embeddings=128, activation="gelu", pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = DistilBertModel(config)
    redraw(model, torch.Generator().manual_seed(1))
    model = model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    save_reference(model, tokenizer, [lines[0][:90], lines[1][:60]], out)


def write_mpnet(corpus, lines):
    out = fresh("mpnet")
    tokenizer = MPNetTokenizerFast(vocab=train_wordpiece(corpus, MPNET_SPECIAL), do_lower_case=True)
    config = MPNetConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                         intermediate_size=128, max_position_embeddings=130, relative_attention_num_buckets=32,
                         layer_norm_eps=1e-5, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = MPNetModel(config)
    redraw(model, torch.Generator().manual_seed(1))
    with torch.no_grad():
        model.encoder.relative_attention_bias.weight.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(2))
    model = model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    save_reference(model, tokenizer, [" ".join(lines[2:5])[:230], lines[5][:120]], out)


def write_mpnet_tokenizer(corpus, lines):
    source = REPO / ".cache" / "models" / "all-mpnet-base-v2"
    if not (source / "tokenizer.json").is_file():
        sys.exit("make_encoder_fixtures: run scripts/fetch-model all-mpnet-base-v2 first")
    out = fresh("mpnet_tokenizer")
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(source / name, out / name)
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    texts = lines[:120] + ["<unk>", "an <UNK> here", "x<unk>y <Unk>", "a <mask> b", "<s> both </s> ends",
                           "[UNK] and <pad>", "Café naïve 中文 — “quotes”", "<mask><mask> <s></s>", ""]
    cases = save_encodings(tokenizer, texts, out)
    print(json.dumps({"folder": str(out.relative_to(REPO)), "cases": len(cases),
                      "unk_added": tokenizer("<unk>")["input_ids"]}))


def write_roberta(corpus, lines):
    out = fresh("roberta")
    vocab, merges = train_byte_level_bpe(corpus, ROBERTA_SPECIAL)
    tokenizer = RobertaTokenizer(vocab=vocab, merges=merges)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                           intermediate_size=128, max_position_embeddings=162, type_vocab_size=1,
                           layer_norm_eps=1e-5, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = RobertaModel(config)
    redraw(model, torch.Generator().manual_seed(1))
    model = model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    save_reference(model, tokenizer, [" ".join(lines[6:9])[:200], lines[9][:90]], out)
    cases = save_encodings(tokenizer, lines[10:70] + TOKENIZER_EDGES, out)
    print(json.dumps({"encodings": len(cases), "mask": tokenizer("a <mask> b")["input_ids"]}))


MODERNBERT_SPECIAL = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def write_modernbert(corpus, lines):
    """transformers' own ModernBertModel (ModernBertConfig's defaults but the size: 3 layers,
    hidden 64, 4 heads of 16, GeGLU 96, 160 positions; local_attention 16 and
    global_attn_every_n_layers 2, so layer 1 attends through a window of 8 either side on the
    ~100-token reference; RoPE bases 160,000 global / 10,000 local; no biases, as ModernBERT-base)
    over ModernBERT's tokenizer pipeline (byte-level BPE without a prefix space, [CLS] $A [SEP],
    [MASK] stripping the space before it) with a 600-token vocabulary trained on Tiny
    Shakespeare; encodings.json holds the ids of 60 more lines and edge texts."""
    out = fresh("modernbert")
    tok = train_byte_level_bpe(corpus, MODERNBERT_SPECIAL, tokenizer=True)
    vocab = tok.get_vocab()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("[MASK]", lstrip=True, normalized=False, special=True)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]",
                                        sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")
    config = ModernBertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                              intermediate_size=96, max_position_embeddings=160, local_attention=16,
                              global_attn_every_n_layers=2, global_rope_theta=160000.0, local_rope_theta=10000.0,
                              pad_token_id=vocab["[PAD]"], bos_token_id=vocab["[CLS]"], eos_token_id=vocab["[SEP]"],
                              cls_token_id=vocab["[CLS]"], sep_token_id=vocab["[SEP]"])
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = ModernBertModel(config)
    redraw(model, torch.Generator().manual_seed(1))
    model = model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    # transformers 5 names its backend class, which 4.x lacks; ModernBERT-base's file names this one.
    tokenizer_config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    tokenizer_config["tokenizer_class"] = "PreTrainedTokenizerFast"
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n", encoding="utf-8")
    # Stripped: sentence-transformers 3 strips what it encodes.
    save_reference(model, tokenizer, [" ".join(lines[11:14])[:300].strip(), lines[14][:120].strip()], out)
    cases = save_encodings(tokenizer, lines[30:90] + TOKENIZER_EDGES + ["a [MASK] b", "[CLS][SEP] x"], out)
    print(json.dumps({"encodings": len(cases), "mask": tokenizer("a [MASK] b")["input_ids"]}))


FORTUNES = Path("/usr/share/games/fortunes")
# Debian's fortunes-{de,es,it,ru,cs,pl,bg,br,zh}: real text in nine languages and four scripts.
FORTUNE_LANGUAGES = ["de", "es", "it", "ru", "cs", "pl", "bg", "brasil", "chinese"]
# Where NFKC, SentencePiece's folds, grapheme clusters and unknown characters meet the pipeline.
UNIGRAM_EDGES = ["ＦＵＬＬ ｗｉｄｔｈ １２３", "ｶﾞｷﾞ half-width kana", "ﬁne ligatures ㍻ ① ™", "e\u0301 decomposed é",
                 "A\u030a Å Å", "zero\u200bwidth\u200d joiner", "👩\u200d💻 emoji 🙂🙂", "क्षत्रिय हिन्दी",
                 "ภาษาไทย", "العربية", "ἀρχή Ελληνικά", "日本語のテキスト", "한국어 텍스트",
                 "tabs\tand\nnewlines\r\n", "  many    spaces  ", "\u3000ideographic\u3000space",
                 "a <mask> b", "<s>x</s>", "<unk><pad>", "", "   ", "\u00a0nbsp\u00a0"]


def fortune_lines():
    """Non-empty lines of the fortunes in FORTUNE_LANGUAGES (UTF-8 files only), in file order."""
    lines = []
    for language in FORTUNE_LANGUAGES:
        root = FORTUNES / language
        files = sorted(root.iterdir()) if root.is_dir() else [root]
        for path in files:
            if path.suffix in (".dat", ".u8") or not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            lines += [l.strip() for l in text.splitlines() if len(l.strip()) > 20 and l.strip() != "%"]
    return lines


def write_xlm_roberta(corpus, lines):
    multilingual = fortune_lines()
    if len(multilingual) < 2000:
        sys.exit("make_encoder_fixtures: install Debian's fortunes-{de,es,it,ru,cs,pl,bg,br,zh} for xlm_roberta")
    train, held_out = multilingual[::2], multilingual[1::2]
    out = fresh("xlm_roberta")
    tokenizer = train_unigram(train + lines[:2000], 3000, normalization_rule_name="nmt_nfkc",
                              character_coverage=0.995)
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                              intermediate_size=128, max_position_embeddings=130, type_vocab_size=1,
                              layer_norm_eps=1e-5, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = XLMRobertaModel(config)
    redraw(model, torch.Generator().manual_seed(1))
    model = model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    save_reference(model, tokenizer, [" ".join(held_out[:4])[:240], held_out[-1][:80]], out)
    cases = save_encodings(tokenizer, held_out[4::max(1, len(held_out) // 300)] + UNIGRAM_EDGES, out)
    unknown = sum(c["ids"].count(tokenizer.unk_token_id) for c in cases)
    print(json.dumps({"encodings": len(cases), "unknown_ids": unknown, "vocab": len(tokenizer)}))


def train_unigram(sentences, vocab_size, **options):
    """A sentencepiece Unigram model (fairseq's layout: <unk> 0, <s> 1, </s> 2) converted by
    transformers' XLMRobertaConverter into an XLMRobertaTokenizer."""
    import sentencepiece as spm  # only here: pip install sentencepiece to regenerate these files
    model_bytes = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=model_bytes,
                                   vocab_size=vocab_size, model_type="unigram", unk_id=0, bos_id=1, eos_id=2,
                                   pad_id=-1, minloglevel=2, **options)
    spm_dir = FIXTURES / "spm-tmp"
    spm_dir.mkdir(exist_ok=True)
    (spm_dir / "sentencepiece.bpe.model").write_bytes(model_bytes.getvalue())
    try:
        return XLMRobertaTokenizer.from_pretrained(str(spm_dir))
    finally:
        shutil.rmtree(spm_dir)


def write_unigram_fuzz_seeds(corpus, lines):
    """tests/fuzz/corpus/unigram_tokenizer_json: two small XLM-R-style tokenizer.json files, one
    with a Precompiled charsmap of eight rules (normalization_rule_tsv), one with tokenizers'
    older Metaspace(add_prefix_space) and no normalizer or WhitespaceSplit."""
    out = REPO / "tests" / "fuzz" / "corpus" / "unigram_tokenizer_json"
    out.mkdir(parents=True, exist_ok=True)
    rules = FIXTURES / "rules.tsv"
    # source code points -> target code points (hex), as sentencepiece's normalization_rule_tsv
    rules.write_text("FF21\t41\nFF22\t42\nFB01\t66 69\nFF76 FF9E\t30AC\nFF76\t30AB\n3000\t20\n"
                     "E9\t65 301\n2460\t31\n", encoding="utf-8")
    try:
        tokenizer = train_unigram(lines[:300], 120, normalization_rule_tsv=str(rules))
    finally:
        rules.unlink()
    saved = json.loads(tokenizer.backend_tokenizer.to_str())
    (out / "xlmr-rules.json").write_text(json.dumps(saved, ensure_ascii=False) + "\n", encoding="utf-8")
    saved["normalizer"] = None
    saved["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True,
                              "str_rep": "\u2581"}
    (out / "metaspace-only.json").write_text(json.dumps(saved, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({"seeds": str(out.relative_to(REPO)),
                      "charsmap_chars": len(json.loads(tokenizer.backend_tokenizer.to_str())["normalizer"]
                                            ["precompiled_charsmap"])}))


CLASSIFIER_CLASSES = {"distilbert": DistilBertForSequenceClassification, "mpnet": MPNetForSequenceClassification,
                      "roberta": RobertaForSequenceClassification,
                      "xlm_roberta": XLMRobertaForSequenceClassification,
                      "modernbert": ModernBertForSequenceClassification}
CLASSIFIER_LABELS = {0: "negative", 1: "neutral", 2: "positive"}


def write_classifier(name, lines):
    """tests/fixtures/<name>_classifier: transformers' own <Family>ForSequenceClassification over
    the <name> fixture's encoder (its weights copied in, the task class's layout: the encoder
    under its prefix, no pooler) with a 3-label head redrawn as `redraw` does, its dense layer
    standardised over the texts (so that predictions differ between them), saved with
    save_pretrained beside the encoder's tokenizer files; reference.safetensors holds input_ids,
    attention_mask and logits [8, 3] of the eight WikiText-2 lines in texts.json."""
    base = FIXTURES / name
    out = fresh(f"{name}_classifier")
    config = AutoConfig.from_pretrained(str(base))
    config.num_labels = len(CLASSIFIER_LABELS)
    config.id2label = dict(CLASSIFIER_LABELS)
    config.label2id = {v: k for k, v in CLASSIFIER_LABELS.items()}
    if name == "modernbert":  # its mean pooling (the default is the first token, as the others)
        config.classifier_pooling = "mean"
    torch.manual_seed(0)
    model = CLASSIFIER_CLASSES[name](config)
    encoder = getattr(model, model.base_model_prefix)
    result = encoder.load_state_dict(AutoModel.from_pretrained(str(base)).state_dict(), strict=False)
    if result.missing_keys or any(not k.startswith("pooler.") for k in result.unexpected_keys):
        sys.exit(f"make_encoder_fixtures: {name}'s encoder does not fit {type(model).__name__}: {result}")
    redraw(model, torch.Generator().manual_seed(3), skip=model.base_model_prefix + ".")
    model = model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    texts = [line[:100] for line in lines[20:28]]
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    # The pooled state varies little between texts next to its mean: the dense layer is
    # standardised over these texts (unit by unit), so that predictions differ between them.
    dense = (model.pre_classifier if name == "distilbert" else model.head.dense if name == "modernbert"
             else model.classifier.dense)
    with torch.no_grad():
        hidden = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        mask = batch["attention_mask"][..., None].float()
        first = (hidden * mask).sum(1) / mask.sum(1) if name == "modernbert" else hidden[:, 0]
        z = first @ dense.weight.T
        dense.weight.div_(z.std(0)[:, None])
        if dense.bias is not None:  # ModernBERT's head.dense has none (classifier_bias false)
            dense.bias.copy_(-(first @ dense.weight.T).mean(0))
        if name == "modernbert":  # its head ends in a LayerNorm: the logits are centred over the texts instead
            model.classifier.bias.sub_(model.eval()(**batch).logits.mean(0))
    model = model.eval()
    model.save_pretrained(out, safe_serialization=True)
    for file in base.iterdir():
        if file.name.startswith(("tokenizer", "vocab", "special_tokens", "merges")):
            shutil.copy(file, out / file.name)
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    (out / "texts.json").write_text(json.dumps(texts, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    save_file({"input_ids": batch["input_ids"].contiguous(), "attention_mask": batch["attention_mask"].contiguous(),
               "logits": logits.float().contiguous()}, str(out / "reference.safetensors"),
              metadata={"transformers": transformers.__version__, "torch": torch.__version__})
    print(json.dumps({"folder": str(out.relative_to(REPO)), "class": type(model).__name__,
                      "tokens": list(batch["input_ids"].shape), "predicted": logits.argmax(1).tolist(),
                      "logit_std": float(logits.std())}))


WRITERS = {"distilbert": write_distilbert, "mpnet": write_mpnet, "mpnet_tokenizer": write_mpnet_tokenizer,
           "roberta": write_roberta, "xlm_roberta": write_xlm_roberta, "modernbert": write_modernbert,
           "unigram_fuzz_seeds": write_unigram_fuzz_seeds,
           **{f"{n}_classifier": (lambda corpus, lines, n=n: write_classifier(n, lines)) for n in CLASSIFIER_CLASSES}}


def main():
    text_file = SHARED / "corpus" / "tinyshakespeare_input.txt"
    wiki_file = SHARED / "corpus" / "wikitext2_raw_test.raw"
    if not text_file.is_file() or not wiki_file.is_file():
        sys.exit(f"make_encoder_fixtures: {SHARED}/corpus not found (set HEADPRUNE_SHARED_DATA)")
    corpus = text_file.read_text(encoding="utf-8")[:300_000]
    lines = [l.strip() for l in wiki_file.read_text(encoding="utf-8").splitlines() if len(l.strip()) > 80]
    for name in sys.argv[1:] or list(WRITERS):
        if name not in WRITERS:
            sys.exit(f"make_encoder_fixtures: unknown fixture {name!r} (known: {', '.join(WRITERS)})")
        WRITERS[name](corpus, lines)


if __name__ == "__main__":
    main()
