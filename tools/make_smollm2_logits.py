"""Reference logits of SmolLM2-135M-Instruct (Q4_1 GGUF) from transformers' own GGUF loading.

Run from the repository root (after scripts/fetch-model SmolLM2-135M-Instruct):
    .venv-current/bin/python tools/make_smollm2_logits.py

transformers 5.24 dequantises the GGUF with the `gguf` package and builds LlamaForCausalLM in
float32. For each of 20 real prompts (ids from transformers' tokenizer of the same file, stored,
so that the logits check does not depend on headprune's tokenizer) the fixture keeps, per
position: the 16 largest logits and their ids, and the log-sum-exp of the whole row (which
the rest of the 49,152 logits enter). Also the greedy ChatML answer to "What is the capital of
France?" (ids), which tests/smollm2_test.cpp reproduces.
Writes tests/fixtures/smollm2/reference_logits.safetensors.
"""
import os

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, LlamaForCausalLM

ROOT = os.path.join(os.path.dirname(__file__), "..")
MODELS = os.path.join(ROOT, ".cache", "models")
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOP = 16
PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "The mitochondria is the powerhouse of the",
    "In 1969, Neil Armstrong became the first person to",
    "Water boils at 100 degrees Celsius at sea level because",
    "import numpy as np\nx = np.arange(10)\nprint(",
    "The quick brown fox jumps over the lazy dog. The quick brown",
    "Photosynthesis converts light energy into",
    "To make a cup of tea, first boil the water, then",
    "The Great Wall of China was built to",
    "SELECT name, age FROM users WHERE",
    "Shakespeare wrote Hamlet, Macbeth and",
    "The derivative of x^2 with respect to x is",
    "A haiku about autumn:\nLeaves fall silently",
    "Paris, London, Berlin, Madrid and Rome are all",
    "The recipe calls for 2 cups of flour, 3 eggs and",
    "Machine learning models are trained by minimising a",
    "Bonjour! Comment allez-vous aujourd'hui?",
    "The 3 most common elements in the universe are",
]


def main():
    tokenizer = AutoTokenizer.from_pretrained(MODELS, gguf_file=GGUF)
    model = LlamaForCausalLM.from_pretrained(MODELS, gguf_file=GGUF, torch_dtype=torch.float32).eval()
    ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    longest = max(len(i) for i in ids)
    out = {"lengths": torch.tensor([len(i) for i in ids]),
           "input_ids": torch.zeros(len(ids), longest, dtype=torch.long),
           "top_ids": torch.zeros(len(ids), longest, TOP, dtype=torch.long),
           "top_logits": torch.zeros(len(ids), longest, TOP),
           "logsumexp": torch.zeros(len(ids), longest)}
    scale = 0.0
    with torch.no_grad():
        for row, seq in enumerate(ids):
            logits = model(torch.tensor([seq])).logits[0]
            top = logits.topk(TOP, dim=-1)
            n = len(seq)
            out["input_ids"][row, :n] = torch.tensor(seq)
            out["top_ids"][row, :n] = top.indices
            out["top_logits"][row, :n] = top.values
            out["logsumexp"][row, :n] = logits.logsumexp(-1)
            scale = max(scale, float(logits.abs().max()))
        chat = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                             add_generation_prompt=True, return_tensors="pt", return_dict=True)
        generated = model.generate(**chat, max_new_tokens=24, do_sample=False)[0, chat["input_ids"].shape[1]:]
    answer = tokenizer.decode(generated, skip_special_tokens=True)
    print("prompts", len(ids), "longest", longest, "max |logit|", scale)
    print("chat answer:", repr(answer))
    out["chat_prompt_ids"] = chat["input_ids"][0].contiguous()
    out["chat_answer_ids"] = generated.contiguous()
    os.makedirs(os.path.join(ROOT, "tests", "fixtures", "smollm2"), exist_ok=True)
    save_file({k: v.contiguous() for k, v in out.items()},
              os.path.join(ROOT, "tests", "fixtures", "smollm2", "reference_logits.safetensors"),
              metadata={"prompts": "\n\x1e".join(PROMPTS), "chat_answer": answer})


if __name__ == "__main__":
    main()
