#!/usr/bin/env python3
"""The largest |difference| between the log_alphas of two gates folders (gates.json
layers[].log_alpha), and how far the first folder's moved from their start (settings
log_alpha_init): how docs/results.md compares runs that should train the same gates.

    python3 tools/log_alpha_difference.py GATES_A GATES_B [GATES_C ...]
"""
import json
import sys
from pathlib import Path


def log_alphas(folder):
    gates = json.loads((Path(folder) / "gates.json").read_text())
    return gates, [a for layer in gates["layers"] for a in layer["log_alpha"]]


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    first, reference = log_alphas(argv[1])
    start = first["settings"]["log_alpha_init"]
    print(f"{argv[1]}: moved up to {max(abs(a - start) for a in reference):.6g} from {start}")
    for other in argv[2:]:
        _, values = log_alphas(other)
        if len(values) != len(reference):
            print(f"{other}: {len(values)} gates against {len(reference)}", file=sys.stderr)
            return 1
        print(f"{other}: largest |difference| {max(abs(a - b) for a, b in zip(reference, values)):.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
