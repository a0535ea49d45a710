#!/usr/bin/env python3
"""An encoder's ONNX export (`headprune export-onnx`) gives the sentence embeddings `headprune
embed` gives for the same folder, in ONNX Runtime alone (no torch, no transformers: a venv with
onnxruntime, numpy and safetensors is enough), e.g. for exports with emptied layers or FFNs:

    python3 -m venv /tmp/ort && /tmp/ort/bin/pip install onnxruntime numpy safetensors
    build/headprune export-onnx out/minilm-layers50 -o /tmp/m.onnx
    /tmp/ort/bin/python tools/check_onnx_embeddings.py out/minilm-layers50 /tmp/m.onnx

Texts: tests/fixtures/minilm/tokens.json's 58, with their reference input_ids (the BERT-family
WordPiece of all-MiniLM-L6-v2; CR/LF as spaces for `embed`, as check_interop.py does). Prints one
JSON line; exit 1 when the cosine of any text is below 0.99999. Never needed at run time.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from safetensors.numpy import load_file

REPO = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="the checkpoint folder the ONNX file was exported from")
    ap.add_argument("onnx", help="its export-onnx file")
    ap.add_argument("--headprune", default=str(REPO / "build" / "headprune"))
    args = ap.parse_args()
    cases = json.loads((REPO / "tests/fixtures/minilm/tokens.json").read_text())["cases"]
    with tempfile.TemporaryDirectory() as tmp:
        texts, out = Path(tmp) / "texts.txt", Path(tmp) / "emb.safetensors"
        texts.write_text("".join(c["text"].replace("\r", " ").replace("\n", " ") + "\n" for c in cases))
        subprocess.run([args.headprune, "embed", args.model, "--data", str(texts), "--embeddings", str(out)],
                       check=True, capture_output=True)
        ours = load_file(str(out))["embeddings"]
    session = ort.InferenceSession(args.onnx, providers=["CPUExecutionProvider"])
    worst, min_cosine = 0.0, 1.0
    for i, case in enumerate(cases):
        ids = np.array([case["input_ids"]], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        feed = {k: v for k, v in feed.items() if k in {x.name for x in session.get_inputs()}}
        e = session.run(["sentence_embedding"], feed)[0][0]
        worst = max(worst, float(np.abs(e - ours[i]).max()))
        min_cosine = min(min_cosine, float(e @ ours[i] / np.linalg.norm(e) / np.linalg.norm(ours[i])))
    print(json.dumps({"onnxruntime": ort.__version__, "texts": len(cases), "max_abs_diff": worst,
                      "min_cosine": min_cosine}))
    return 0 if min_cosine >= 0.99999 else 1


if __name__ == "__main__":
    sys.exit(main())
