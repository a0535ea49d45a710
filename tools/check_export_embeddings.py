#!/usr/bin/env python3
"""A headprune export loads in this venv's transformers and sentence-transformers
(trust_remote_code=True), cleanly, and its sentence embeddings equal `headprune embed`'s.

For exports of the BERT-style families (the encoder's layers under `encoder.layer`), e.g. a
pruned all-mpnet-base-v2; run with each pinned environment:

    .venv-ref/bin/python tools/check_export_embeddings.py out/mpnet-50 [--headprune build/headprune]
    .venv-current/bin/python tools/check_export_embeddings.py out/mpnet-50

Texts: tests/fixtures/minilm/tokens.json's 58 (CR/LF as spaces, as check_interop.py does).
Prints one JSON line (versions, class, loading problems, heads per layer, max |diff|, min cosine);
exit 1 when the load is not clean or the cosine is below 0.99999. Never needed at run time.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import sentence_transformers  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from transformers import AutoModel  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def heads_of(layer):
    """The head count of one encoder layer, whatever the family calls its attention module."""
    attention = layer.attention
    for module in (getattr(attention, "self", None), getattr(attention, "attn", None), attention):
        for name in ("num_attention_heads", "num_heads", "n_heads"):
            if module is not None and hasattr(module, name):
                return int(getattr(module, name))
    raise ValueError(f"no head count on {type(attention).__name__}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--headprune", default=str(REPO / "build" / "headprune"))
    args = ap.parse_args()
    cases = json.loads((REPO / "tests" / "fixtures" / "minilm" / "tokens.json").read_text(encoding="utf-8"))["cases"]
    texts = [c["text"].replace("\r", " ").replace("\n", " ") for c in cases]
    with tempfile.TemporaryDirectory() as work:
        text_file, out = Path(work) / "texts.txt", Path(work) / "ours.safetensors"
        text_file.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
        subprocess.run([args.headprune, "embed", args.folder, "--data", str(text_file), "--embeddings", str(out)],
                       check=True, capture_output=True)
        ours = load_file(str(out))["embeddings"].astype(np.float64)
    model, info = AutoModel.from_pretrained(args.folder, trust_remote_code=True, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    st = SentenceTransformer(args.folder, device="cpu", trust_remote_code=True)
    ref = np.asarray(st.encode(texts, batch_size=16, convert_to_numpy=True, show_progress_bar=False), np.float64)
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    print(json.dumps({"transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
                      "class": type(model).__name__, "loading_problems": problems,
                      "heads": [heads_of(layer) for layer in model.encoder.layer], "texts": len(texts),
                      "max_abs_diff": float(np.abs(ours - ref).max()), "min_cosine": float(cos.min())}))
    return 0 if not problems and cos.min() >= 0.99999 else 1


if __name__ == "__main__":
    sys.exit(main())
