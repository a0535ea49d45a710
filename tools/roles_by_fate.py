#!/usr/bin/env python3
"""Which roles do the heads the gates remove have, and which do the survivors have?

Reads `headprune heads --gates DIR --out FILE` results (one per target; docs/formats.md,
"Head roles JSON") and prints a Markdown table: per target, heads of each primary role kept /
removed, and the mean importance of the kept and the removed heads. Importance is per head of
the dense model, so it can come from one run (--importance FILE) for all targets.

    tools/roles_by_fate.py --importance roles-50.json 25=roles-25.json 50=roles-50.json 75=roles-75.json
Standard library only.
"""
import argparse
import json
import sys

ROLE_ORDER = ["positional", "syntactic", "previous-punctuation", "rare-token", "delimiter", "sink",
              "punctuation", "other"]


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def importance_of(run):
    return {(h["layer"], h["head"]): h["importance"] for h in run["heads"] if "importance" in h}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--importance", help="a heads JSON with importance (default: each run's own)")
    parser.add_argument("runs", nargs="+", help="LABEL=FILE: a heads JSON made with --gates")
    args = parser.parse_args()
    shared = importance_of(load(args.importance)) if args.importance else None
    runs = [(label, load(path)) for label, path in (r.split("=", 1) for r in args.runs)]
    roles = [r for r in ROLE_ORDER if any(r in run["roles"] for _, run in runs)]
    print("| removed | " + " | ".join(f"{r} kept / removed" for r in roles) +
          " | mean importance kept | mean importance removed |")
    print("|---" * (len(roles) + 3) + "|")
    for label, run in runs:
        if any("fate" not in h for h in run["heads"]):
            sys.exit(f"{label}: made without --gates (no kept/removed per head)")
        importance = shared if shared is not None else importance_of(run)
        cells = [f'{run["roles"].get(r, {}).get("kept", 0)} / {run["roles"].get(r, {}).get("removed", 0)}'
                 for r in roles]
        means = []
        for fate in ("kept", "removed"):
            values = [importance[(h["layer"], h["head"])] for h in run["heads"] if h["fate"] == fate]
            means.append(f"{sum(values) / len(values):.4f}" if values else "-")
        print(f"| {label} | " + " | ".join(cells) + f" | {means[0]} | {means[1]} |")


if __name__ == "__main__":
    main()
