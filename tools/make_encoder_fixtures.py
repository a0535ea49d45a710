"""Writes tests/fixtures/distilbert/: a small DistilBERT encoder made and saved by transformers
itself, and its reference outputs, for headprune to match.

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

    .venv-current/bin/python tools/make_encoder_fixtures.py

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
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import DistilBertConfig, DistilBertModel, DistilBertTokenizerFast  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
SHARED = Path(os.environ.get("HEADPRUNE_SHARED_DATA") or REPO.parent / "shared" / "data")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_wordpiece(text):
    """BERT's pipeline over a 600-token vocabulary."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=600, special_tokens=SPECIAL, show_progress=False)
    tok.train_from_iterator([text], trainer=trainer)
    return DistilBertTokenizerFast(vocab=tok.get_vocab(), do_lower_case=True)


def redraw(model, generator):
    """Linear std 0.8/sqrt(fan_in), biases std 0.5, embeddings std 0.3, LayerNorm weights
    1 + 0.1 N(0, 1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            if "norm" in name.lower() and name.endswith(".weight"):
                p.copy_(1.0 + 0.1 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.5 * noise)
            elif "embeddings" in name:
                p.copy_(0.3 * noise)
            else:
                p.copy_(noise * 0.8 / p.shape[1] ** 0.5)


def main():
    text_file = SHARED / "corpus" / "tinyshakespeare_input.txt"
    wiki_file = SHARED / "corpus" / "wikitext2_raw_test.raw"
    if not text_file.is_file() or not wiki_file.is_file():
        sys.exit(f"make_encoder_fixtures: {SHARED}/corpus not found (set HEADPRUNE_SHARED_DATA)")
    out = FIXTURES / "distilbert"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tokenizer = train_wordpiece(text_file.read_text(encoding="utf-8")[:300_000])
    config = DistilBertConfig(vocab_size=len(tokenizer), dim=64, n_layers=3, n_heads=4, hidden_dim=128,
                              max_position_embeddings=128, activation="gelu", pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = DistilBertModel(config)
    redraw(model, torch.Generator().manual_seed(1))
    model = model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    lines = [l.strip() for l in wiki_file.read_text(encoding="utf-8").splitlines() if len(l.strip()) > 80]
    texts = [lines[0][:90], lines[1][:60]]
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


if __name__ == "__main__":
    main()
