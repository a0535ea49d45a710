#!/usr/bin/env python3
"""Makes a real BertForSequenceClassification checkpoint from all-MiniLM-L6-v2 for headprune's
`eval --classification` tests, and its reference accuracy and logits from HF transformers.

The classifier is a linear probe: all-MiniLM-L6-v2's encoder and pooler stay frozen and only
`classifier` (a 2 x 384 linear layer, HF BertForSequenceClassification's head) is fitted, by
L-BFGS logistic regression, on the pooled output of the first 4,000 sentences of GLUE SST-2
`train.tsv`. The last 872 rows of that file (the size of SST-2's dev split; never seen by the
probe) are the evaluation split.

    .venv-ref/bin/python tools/make_classifier_fixture.py \
        --sst2 ../shared/data/sst2/train.tsv [--model .cache/models/all-MiniLM-L6-v2] \
        [--out tests/fixtures/minilm] [--checkpoint DIR]

Outputs (in --out):
  sst2_classifier.safetensors   classifier.weight [2, 384], classifier.bias [2] (float32)
  sst2_reference.json           {"generator", "train_rows", "eval_first_row", "eval_rows",
                                 "labels", "accuracy", "correct", "texts": [first 16 eval
                                 sentences], "logits": [[2 floats] per text]}
With --checkpoint DIR it also writes the composed checkpoint folder (the MiniLM folder with
config.json's architectures/id2label set and "bert."-prefixed weights plus the classifier),
which is what the reference numbers were computed on; the C++ test composes the same folder.
Never needed at run time.
"""

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from sst2 import read_sst2  # noqa: E402

TRAIN_ROWS = 4000
EVAL_ROWS = 872
LABELS = ["negative", "positive"]


def compose(model_dir, head, out_dir):
    """The MiniLM folder turned into a BertForSequenceClassification checkpoint."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for item in model_dir.iterdir():
        if item.name in ("config.json", "model.safetensors", "pytorch_model.bin") or item.name.startswith("."):
            continue
        if item.is_dir():
            shutil.copytree(item, out_dir / item.name, dirs_exist_ok=True)
        elif item.suffix not in (".bin", ".h5", ".msgpack", ".onnx", ".ot"):
            shutil.copy(item, out_dir / item.name)
    config = json.loads((model_dir / "config.json").read_text())
    config["architectures"] = ["BertForSequenceClassification"]
    config["id2label"] = {str(i): name for i, name in enumerate(LABELS)}
    config["label2id"] = {name: i for i, name in enumerate(LABELS)}
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    weights = {"bert." + k: v for k, v in load_file(str(model_dir / "model.safetensors")).items()}
    weights.update(head)
    save_file(weights, str(out_dir / "model.safetensors"), metadata={"format": "pt"})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sst2", required=True, type=Path)
    ap.add_argument("--model", type=Path, default=Path(".cache/models/all-MiniLM-L6-v2"))
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/minilm"))
    ap.add_argument("--checkpoint", type=Path)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))

    rows = read_sst2(args.sst2)
    train, evaluation = rows[:TRAIN_ROWS], rows[-EVAL_ROWS:]
    tok = transformers.AutoTokenizer.from_pretrained(str(args.model))
    encoder = transformers.BertModel.from_pretrained(str(args.model), attn_implementation="eager").eval()

    pooled = []
    with torch.no_grad():
        for i in range(0, len(train), 64):
            batch = tok([t for t, _ in train[i:i + 64]], padding=True, truncation=True, max_length=256,
                        return_tensors="pt")
            pooled.append(encoder(**batch).pooler_output)
    x = torch.cat(pooled)
    y = torch.tensor([label for _, label in train])
    probe = torch.nn.Linear(x.shape[1], len(LABELS))
    opt = torch.optim.LBFGS(probe.parameters(), max_iter=500, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(probe(x), y) + 1e-4 * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    head = {"classifier.weight": probe.weight.detach().contiguous(),
            "classifier.bias": probe.bias.detach().contiguous()}
    train_acc = (probe(x).argmax(1) == y).float().mean().item()

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.checkpoint or Path(tmp) / "minilm-sst2"
        compose(args.model, head, folder)
        model, info = transformers.BertForSequenceClassification.from_pretrained(
            str(folder), attn_implementation="eager", output_loading_info=True)
        if any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")):
            raise SystemExit(f"composed checkpoint does not load cleanly: {info}")
        model.eval()
        logits = []
        with torch.no_grad():
            for i in range(0, len(evaluation), 64):
                batch = tok([t for t, _ in evaluation[i:i + 64]], padding=True, truncation=True,
                            max_length=256, return_tensors="pt")
                logits.append(model(**batch).logits)
        logits = torch.cat(logits)
    gold = torch.tensor([label for _, label in evaluation])
    correct = int((logits.argmax(1) == gold).sum())

    args.out.mkdir(parents=True, exist_ok=True)
    save_file(head, str(args.out / "sst2_classifier.safetensors"))
    reference = {
        "generator": f"tools/make_classifier_fixture.py (transformers {transformers.__version__}, "
                     f"torch {torch.__version__})",
        "train_rows": TRAIN_ROWS,
        "train_accuracy": round(train_acc, 6),
        "eval_first_row": len(rows) - EVAL_ROWS,
        "eval_rows": EVAL_ROWS,
        "labels": LABELS,
        "accuracy": correct / EVAL_ROWS,
        "correct": correct,
        "texts": [t for t, _ in evaluation[:16]],
        "logits": [[round(float(v), 6) for v in row] for row in logits[:16]],
    }
    (args.out / "sst2_reference.json").write_text(json.dumps(reference, indent=1) + "\n")
    print(f"probe train accuracy {train_acc:.4f}; held-out accuracy {correct}/{EVAL_ROWS} = "
          f"{correct / EVAL_ROWS:.4f}")


if __name__ == "__main__":
    main()
