#!/usr/bin/env python3
"""Sentence-level SST-2 splits for measuring labelled pruning (docs/results.md, "Labelled task loss").

GLUE SST-2's `train.tsv` (67,349 rows) mixes the Stanford Sentiment Treebank's full training
sentences with every labelled phrase of their parse trees; most rows are short fragments. A
split of its last rows (mostly phrases: 90 of the last 872 are sentences) flatters a classifier,
so headprune measures on full sentences instead:

  * a row is a *sentence* when it has at least 4 words and occurs in no other row (a phrase is
    always a substring of the sentence it was cut from);
  * rows before --first-row (4,000: the rows tests/fixtures/minilm's linear probe was fitted on)
    are left out;
  * of the remaining sentences, --eval-rows (872, the size of GLUE's SST-2 dev split) chosen with
    random.Random(--seed) are the evaluation split, the rest the labelled training text.

Sentences are never substrings of other rows, so no phrase of an evaluation sentence is in the
training text. Writes, in --out:
  sst2-sentences-eval.tsv    sentence<TAB>label with a header (eval --classification FILE)
  sst2-sentences-train.tsv   the labelled training text (prune --labels FILE)
  sst2-sentences-train.txt   the same sentences without labels (prune --data FILE, label-free)

    python3 tools/make_sst2_splits.py --sst2 ../shared/data/sst2/train.tsv --out /tmp/sst2

Standard library only; about 35 s. Never needed at run time.
"""

import argparse
import collections
import random
from pathlib import Path

from sst2 import read_sst2


def sentence_rows(rows, first_row, min_words):
    """Indices (>= first_row) of rows that occur in no other row."""
    blob = "\n" + "\n".join(text for text, _ in rows) + "\n"
    copies = collections.Counter(text for text, _ in rows)
    return [i for i, (text, _) in enumerate(rows)
            if i >= first_row and len(text.split()) >= min_words and blob.count(text) == copies[text]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sst2", required=True, help="GLUE SST-2 train.tsv")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--first-row", type=int, default=4000)
    ap.add_argument("--eval-rows", type=int, default=872)
    ap.add_argument("--min-words", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = [(text.strip(), label) for text, label in read_sst2(args.sst2)]
    sentences = sentence_rows(rows, args.first_row, args.min_words)
    chosen = set(random.Random(args.seed).sample(sentences, args.eval_rows))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "sst2-sentences-eval.tsv", "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        f.writelines(f"{rows[i][0]}\t{rows[i][1]}\n" for i in sentences if i in chosen)
    train = [i for i in sentences if i not in chosen]
    with open(out / "sst2-sentences-train.tsv", "w", encoding="utf-8") as f:
        f.writelines(f"{rows[i][0]}\t{rows[i][1]}\n" for i in train)
    with open(out / "sst2-sentences-train.txt", "w", encoding="utf-8") as f:
        f.writelines(f"{rows[i][0]}\n" for i in train)
    print(f"{len(rows)} rows, {len(sentences)} sentences from row {args.first_row}: "
          f"{len(chosen)} for evaluation, {len(train)} for training, in {out}")


if __name__ == "__main__":
    main()
