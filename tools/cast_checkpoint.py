"""Copies a checkpoint folder with every floating-point tensor of model.safetensors cast to
bfloat16 (or float16): a checkpoint as most are published, for measuring headprune's frozen
weights kept in the file's dtype (docs/results.md, "Frozen weights in the file's dtype") from a
float32 one, e.g. the folder `headprune convert-gguf` writes from SmolLM2's GGUF.

    .venv-current/bin/python tools/cast_checkpoint.py SRC DST [--dtype bfloat16|float16]

Every other file of SRC is copied as it is; config.json is not changed (headprune reads the
dtype from the tensors). Sharded folders are refused. Never touches the network.
"""
import argparse
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--dtype", choices=["bfloat16", "float16"], default="bfloat16")
    args = parser.parse_args()
    weights = args.src / "model.safetensors"
    if not weights.is_file():
        sys.exit(f"{args.src} has no model.safetensors (sharded folders are not supported)")
    args.dst.mkdir(parents=True, exist_ok=True)
    for f in args.src.iterdir():
        if f.is_file() and f.name != "model.safetensors":
            shutil.copy(f, args.dst / f.name)
    dtype = getattr(torch, args.dtype)
    tensors = load_file(weights)
    save_file({k: (v.to(dtype) if v.is_floating_point() else v) for k, v in tensors.items()},
              args.dst / "model.safetensors")
    print(f"{args.dst}: {len(tensors)} tensors, floating ones in {args.dtype}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
