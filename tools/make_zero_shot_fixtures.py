"""Writes tests/fixtures/zero_shot/: a few questions of each zero-shot task and what
lm-evaluation-harness 0.4.13 scores on them, for tests/zero_shot_test.cpp.

  * tasks/TASK.jsonl: the first 8 questions of piqa, arc_easy and hellaswag (lines as
    scripts/fetch-data writes them, from .cache/tasks) whose every answer, with its context,
    is at most 200 tokens for the fixture decoders' tokenizer (their models have 256 positions);
    the data sets' licences: PIQA AFL-3.0, ARC CC BY-SA 4.0, HellaSwag MIT;
  * MODEL.json: tools/lm_eval_reference.py's lm_eval_scores of each model on exactly those
    questions (original indices from the split, renumbered 0.. as in the subset files):
      llama3, gemma3   the seeded transformers decoders of tests/fixtures/ (no BOS added);
      smollm2          SmolLM2-135M-Instruct: its GGUF as `headprune convert-gguf` writes it
                       (float32, the weights headprune reads from the GGUF), given as --smollm2.

    scripts/fetch-data piqa arc_easy hellaswag
    build/headprune convert-gguf .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf -o /tmp/smollm2-hf
    .venv-lmeval/bin/python tools/make_zero_shot_fixtures.py --smollm2 /tmp/smollm2-hf

Never touches the network.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lm_eval_reference import ROOT, TASK_DIR, lm_eval_scores  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

OUT = ROOT / "tests/fixtures/zero_shot"
TASKS = ["piqa", "arc_easy", "hellaswag"]
PER_TASK, MAX_TOKENS = 8, 200


def subset(task, tokenizers):
    """(original index, line) of the first PER_TASK questions that fit every tokenizer."""
    picked = []
    for index, text in enumerate(open(TASK_DIR / f"{task}.jsonl", encoding="utf-8")):
        q = json.loads(text)
        longest = max(len(t.encode(q["context"] + " " + c)) for t in tokenizers for c in q["choices"])
        if longest <= MAX_TOKENS:
            picked.append((index, text))
        if len(picked) == PER_TASK:
            return picked
    sys.exit(f"make_zero_shot_fixtures: {task}: fewer than {PER_TASK} questions fit")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smollm2", required=True, help="SmolLM2-135M-Instruct as an HF folder (convert-gguf)")
    args = p.parse_args()
    fixtures = ROOT / "tests/fixtures"
    tokenizers = [AutoTokenizer.from_pretrained(fixtures / m) for m in ("llama3", "gemma3")]
    (OUT / "tasks").mkdir(parents=True, exist_ok=True)
    indices = {}
    for task in TASKS:
        picked = subset(task, tokenizers)
        indices[task] = [i for i, _ in picked]
        (OUT / "tasks" / f"{task}.jsonl").write_text("".join(text for _, text in picked), encoding="utf-8")
    for name, model in (("llama3", fixtures / "llama3"), ("gemma3", fixtures / "gemma3"), ("smollm2", args.smollm2)):
        result = lm_eval_scores(model, TASKS, indices)
        result["model"] = name
        for task, r in result["tasks"].items():
            local = {original: i for i, original in enumerate(indices[task])}
            for q in r["questions"]:
                q["index"] = local[q["index"]]
        (OUT / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
        print(f"make_zero_shot_fixtures: {OUT / name}.json: " +
              ", ".join(f"{t} acc {r['acc']:.3f}" for t, r in result["tasks"].items()))


if __name__ == "__main__":
    main()
