#!/usr/bin/env python3
"""Writes tests/fixtures/safetensors/python_written.safetensors with the reference writer.

The fixture checks that headprune reads files made by Hugging Face's own `safetensors`
package (which orders tensors by dtype alignment, not by name). Run it from the repository
root in a scratch environment that has the writer:

    python3 -m venv /tmp/stvenv && /tmp/stvenv/bin/pip install safetensors numpy
    /tmp/stvenv/bin/python tools/make_safetensors_fixture.py

The values are fixed, and tests/safetensors_test.cpp spells them out; keep the two in step.
"""
import pathlib

import numpy as np
from safetensors.numpy import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/safetensors/python_written.safetensors"

tensors = {
    "f32": np.array([[1.5, -2.0, 0.0], [3.25, -0.0, 1e-3]], dtype=np.float32),
    "f16": np.array([0.5, -1.0, 65504.0, 6.1e-5], dtype=np.float16),
    "i64": np.array([-(2**63), 2**63 - 1, 0, 42], dtype=np.int64),
    "mask": np.array([[True, False], [False, True]], dtype=np.bool_),
    "scalar": np.array(7.0, dtype=np.float32),
    "empty": np.zeros((0, 4), dtype=np.float32),
}
OUT.parent.mkdir(parents=True, exist_ok=True)
save_file(tensors, str(OUT), metadata={"format": "np", "made_by": "tools/make_safetensors_fixture.py"})
print(OUT, OUT.stat().st_size, "bytes")
