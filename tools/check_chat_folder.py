#!/usr/bin/env python3
"""Checks an HF LLaMA chat folder written by headprune (convert-gguf, or a --uniform-layers prune
of SmolLM2-135M-Instruct): transformers' LlamaForCausalLM loads it with no extra file and clean
loading info, AutoTokenizer's ChatML prompt ids equal headprune's, and greedy decoding of
"What is the capital of France?" gives the token ids of `headprune generate --chat`
(tools/check_interop.py's check_chat_folder, the check its "smollm2 gguf -> HF folder" case runs).

    .venv-current/bin/python tools/check_chat_folder.py out/smol/uniform33-tw [--headprune build/headprune]

Exit status 0 when it passes, 1 when it does not. Never needed at run time.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_interop  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="the HF folder (config.json, model.safetensors, tokenizer.json)")
    ap.add_argument("--headprune", default=str(check_interop.DEFAULT_HEADPRUNE), help="the headprune binary")
    args = ap.parse_args()
    case = check_interop.Case("chat folder")
    try:
        check_interop.check_chat_folder(case, Path(args.headprune).resolve(), Path(args.folder).resolve())
    except check_interop.CheckFailed as e:
        case.fail(str(e))
    print(f"{args.folder}: {case.result}" + "".join(f"\n  {note}" for note in case.notes))
    return 0 if case.result == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
