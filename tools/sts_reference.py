#!/usr/bin/env python3
"""Reference STS-B score of a model, computed by sentence-transformers itself.

Reads an STS-Benchmark file the way the format requires (tab-separated, no quoting, fields 5-7 =
score, sentence1, sentence2; 7 or 9 fields per line), encodes both sides with
SentenceTransformer, and reports Spearman x100 between cosine similarity and the gold score —
what sentence-transformers' EmbeddingSimilarityEvaluator computes (spearmanr of cosine scores).

    .venv-ref/bin/python tools/sts_reference.py --model .cache/models/all-MiniLM-L6-v2 \
        --sts ../shared/data/stsb/sts-dev.csv --out tests/fixtures/minilm/sts_dev_reference.json
"""
import argparse
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import sentence_transformers  # noqa: E402
import torch  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.evaluation import EmbeddingSimilarityEvaluator  # noqa: E402


def read_sts(path):
    s1, s2, gold = [], [], []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) not in (7, 9):
                sys.exit(f"{path} line {n}: {len(fields)} fields, expected 7 or 9")
            gold.append(float(fields[4]))
            s1.append(fields[5])
            s2.append(fields[6])
    return s1, s2, gold


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=".cache/models/all-MiniLM-L6-v2")
    ap.add_argument("--sts", required=True)
    ap.add_argument("--out", help="write the result as JSON here")
    args = ap.parse_args()
    torch.set_num_threads(2)
    s1, s2, gold = read_sts(args.sts)
    model = SentenceTransformer(args.model, device="cpu")
    evaluator = EmbeddingSimilarityEvaluator(s1, s2, gold, name="sts-dev")
    scores = evaluator(model)
    key = next(k for k in scores if k.endswith("spearman_cosine"))
    # The same number by hand, as a cross-check of the evaluator's definition.
    e1 = model.encode(s1, convert_to_numpy=True, normalize_embeddings=True)
    e2 = model.encode(s2, convert_to_numpy=True, normalize_embeddings=True)
    by_hand = 100 * spearmanr((e1 * e2).sum(1), gold).correlation
    result = {
        "generator": f"tools/sts_reference.py (sentence-transformers {sentence_transformers.__version__}, "
                     f"torch {torch.__version__})",
        "file": os.path.basename(args.sts),
        "pairs": len(gold),
        "spearman": 100 * scores[key],
        "spearman_by_hand": by_hand,
    }
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
