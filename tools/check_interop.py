#!/usr/bin/env python3
"""Interop check: folders written by `headprune apply` load in HF transformers and
sentence-transformers, and their embeddings match `headprune embed`.

Run from the repository root with either pinned environment (tools/setup-reference-env):

    .venv-ref/bin/python tools/check_interop.py --headprune build/headprune \
        --model .cache/models/all-MiniLM-L6-v2 [--work DIR] [--keep]
    .venv-current/bin/python tools/check_interop.py ...      # transformers 5 / ST 6

Routes by transformers version:
  4.x  pruned folders load natively (config.json's pruned_heads, no remote code); the uneven
       case also loads them with trust_remote_code=True (headprune's modeling file runs on 4.x).
  5.x  pruned BERT folders load only with trust_remote_code=True (modeling_headprune_bert.py,
       registered in auto_map); without it transformers 5 must refuse them (size mismatch),
       which is recorded as the expected failure. LLaMA with uniform layers loads natively.
  both LLaMA folders that transformers' LlamaForCausalLM cannot build (uneven layers, an empty
       layer, on 5.x a head count not dividing hidden_size) load with trust_remote_code=True
       (modeling_headprune_llama.py, registered in auto_map).

Cases (texts: every "cases"[i]["text"] of tests/fixtures/minilm/tokens.json):

  dense       headprune embed on the unpruned model vs SentenceTransformer(model).encode
  uneven      apply --remove-heads {"0":[0,1,2],"1":[5],"3":[0,2,4,6,8,10],"5":[3,7,11]};
              AutoModel.from_pretrained loads it with no missing / unexpected / mismatched keys,
              its heads per layer and parameter count equal `headprune inspect --json`, and
              sentence-transformers' embeddings of the folder match headprune embed's
  repruned    apply --remove-heads {"0":[3],"3":[1]} on the "uneven" folder: config.json's
              pruned_heads holds the union in original head indices, then the same checks
  zero-head   apply --remove-heads {"2":[0..11]}: apply must warn on stderr (older
              transformers/torch fail on empty layers, transformers issue 17475), headprune
              embed must work, and the pinned transformers (4.46.3 + torch 2.5.1 natively,
              5.x with remote code) must load the folder and match headprune's embeddings.
  classifier  all-MiniLM-L6-v2 + the SST-2 probe of tests/fixtures/minilm (composed as
              tools/make_classifier_fixture.py does), apply --remove-heads (uneven):
              AutoModelForSequenceClassification loads the folder cleanly, and `headprune eval
              --classification` on the fixture's 16 texts, labelled with transformers'
              predictions, scores 100%.
  st-dense    sentence-transformers saves all-MiniLM-L6-v2 + Pooling(mean, max) + Dense(768->4,
              tanh) + Normalize; headprune embed on it and on an uneven prune of it matches
              SentenceTransformer.encode (cosine), so Dense and multi-mode pooling are computed
              and the Dense weights survive export.
  llama-gqa   stories260K (--stories DIR, default $HEADPRUNE_SHARED_DATA/stories260K or
              ../shared/data/stories260K): convert-llama2c, then apply --remove-heads keeping
              one query head of every KV group in every layer: LlamaForCausalLM loads the
              standard config (4 query heads, 4 KV heads, head_dim 8) cleanly, and greedy
              decoding of 40 tokens from BOS gives the same token ids in transformers and in
              `headprune generate --temperature 0`.
  onnx-*      (where onnxruntime is installed: .venv-current) ONNX Runtime on headprune's ONNX:
              the uneven MiniLM prune (apply --onnx) and the zero-head folder (export-onnx
              --external-data: weights in zero-head.onnx_data):
              last_hidden_state within 1e-4 of transformers' on real tokens, sentence_embedding
              within the cosine threshold of headprune embed; export-onnx over an existing file
              refused (exit 1); the pruned classifier's logits within 1e-4 of transformers';
              the uniform stories260K prune's logits within 1e-4 of LlamaForCausalLM's (a padded
              row too), and an uneven one (5, 8, 7, 8, 4 heads) decoding 40 greedy tokens as
              headprune generate does.
  llama-6     the converted stories260K with KV group 3 removed in every layer (6 query heads,
              3 KV heads, hidden 64): apply warns that transformers 5 refuses it natively; 4.x
              loads it natively, 5.x refuses it (expected); with trust_remote_code=True
              (modeling_headprune_llama.py) both load it; every route decodes 20 greedy tokens
              as headprune does.
  llama-uneven  5, 8, 0, 8, 4 query heads (layer 2 empty): LlamaForCausalLM cannot build it
              (expected, every version); AutoModelForCausalLM with trust_remote_code=True loads
              it cleanly and decodes 40 greedy tokens as headprune does.
  <family> dense, uniform, uneven   (qwen2, mistral, phi3, llama3 (Llama 3.2's layout and RoPE
              scaling); qwen3, gemma3 in transformers 5 only) the
              decoder fixtures transformers made (tests/fixtures/<family>,
              tools/make_decoder_fixtures.py): dense, 2 of 4 heads per layer, and 3, 4, 2 heads;
              each loads natively where transformers' class can build it (refused as the export
              note says where not) and with trust_remote_code=True where the export carries the
              code; every route decodes 16 greedy tokens as headprune generate does.
  onnx <family> uneven   ONNX Runtime's logits on the uneven decoder prunes against the
              remote-code model's, on a right-padded batch of 14 tokens (past the window of 8).
  distilbert, mpnet, roberta, xlm_roberta   the encoder fixtures transformers made
              (tests/fixtures/<name>, tools/make_encoder_fixtures.py; --mpnet DIR adds the real
              all-mpnet-base-v2): dense and pruned unevenly (a layer emptied where the family
              allows), loaded natively where transformers' class holds pruned_heads and with
              trust_remote_code=True where the export carries the code; heads and parameters equal
              headprune's; sentence-transformers' embeddings equal `headprune embed`'s.
  modernbert dense, uneven   tests/fixtures/modernbert: dense through transformers 5's own
              ModernBertModel (4.46 has none); pruned unevenly with the local layer emptied, which
              no transformers class holds: loaded with trust_remote_code=True in both versions,
              heads, parameters and sentence-transformers' embeddings equal headprune's.
  onnx distilbert / mpnet / roberta / xlm_roberta / modernbert uneven   ONNX Runtime's
              last_hidden_state on those prunes against transformers' on the fixture's padded batch.
  <name> classifier uneven   (distilbert, mpnet, roberta, xlm_roberta, modernbert) tests/fixtures/<name>_classifier,
              transformers' own <Family>ForSequenceClassification, pruned unevenly:
              AutoModelForSequenceClassification loads it cleanly (natively where the family's
              class holds pruned_heads, else with trust_remote_code=True), with headprune's heads;
              its predictions on 8 texts (two classes at least) are `headprune eval
              --classification`'s; with onnxruntime, the ONNX export's logits within 1e-4 of its.
  torchrun    PyTorch's own launcher (`python -m torch.distributed.run --no-python`, the pinned
              torch) starts 2 ranks of `headprune train-gates --distributed` on MiniLM (5 steps,
              batch 8 of the texts); gates.json equals one process's run: the same mask and
              log_alpha within 1e-5.

Every required cosine must be >= --min-cosine (default 0.99999). Exit 0 when every required
check passes, 1 otherwise (the reason is printed), 2 for usage errors.

Texts: `headprune embed` reads one sentence per line, so a text's CR and LF characters are
replaced by spaces on both sides; BERT's basic tokenizer treats them as whitespace either way,
so the token ids do not change.

Never needed at run time.
"""

import os

# The model is local; never touch the network.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sentence_transformers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from transformers import AutoModel  # noqa: E402

try:
    import onnxruntime  # noqa: E402,F401 - ONNX cases run where it is installed (.venv-current)
    HAVE_ORT = True
except ImportError:
    HAVE_ORT = False

# transformers 5 removed head pruning: pruned BERT folders need headprune's remote code there.
REMOTE = int(transformers.__version__.split(".")[0]) >= 5

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = REPO / ".cache" / "models" / "all-MiniLM-L6-v2"
DEFAULT_HEADPRUNE = REPO / "build" / "headprune"
DEFAULT_TEXTS = REPO / "tests" / "fixtures" / "minilm" / "tokens.json"

UNEVEN = {"0": [0, 1, 2], "1": [5], "3": [0, 2, 4, 6, 8, 10], "5": [3, 7, 11]}
# stories260K: 8 query heads per layer, KV head g serves query heads 2g and 2g+1.
LLAMA_UNIFORM = {"0": [1, 3, 5, 7], "1": [0, 2, 4, 6], "2": [1, 2, 5, 6], "3": [0, 3, 4, 7],
                 "4": [1, 3, 5, 7]}
REPRUNE = {"0": [3], "3": [1]}
ZERO_LAYER = 2


class CheckFailed(Exception):
    """A required check failed; the message says why."""


class Case:
    def __init__(self, name, required=True):
        self.name = name
        self.required = required
        self.min_cos = None
        self.max_diff = None
        self.result = "PASS"
        self.notes = []
        self.seconds = 0.0

    def fail(self, reason):
        self.result = "FAIL"
        self.notes.append(reason)


# --------------------------------------------------------------------------------------------
# headprune


def run_headprune(args, exe, what, expect_ok=True):
    cmd = [str(exe), *[str(a) for a in args]]
    print(f"  $ {' '.join(cmd)}", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace")
    if expect_ok and proc.returncode != 0:
        raise CheckFailed(f"{what} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
    return proc


def headprune_embed(exe, model_dir, text_file, work, tag):
    out = work / f"emb-{tag}.safetensors"
    run_headprune(["embed", model_dir, "--data", text_file, "--embeddings", out], exe, f"headprune embed {tag}")
    emb = load_file(str(out))["embeddings"]
    return emb.astype(np.float64)


def headprune_inspect(exe, model_dir):
    proc = run_headprune(["inspect", model_dir, "--json"], exe, "headprune inspect")
    return json.loads(proc.stdout)


def headprune_apply(exe, model_dir, remove, out):
    proc = run_headprune(["apply", model_dir, "--remove-heads", json.dumps(remove), "--out", out],
                         exe, f"headprune apply {json.dumps(remove)}")
    return proc


# --------------------------------------------------------------------------------------------
# reference side


@contextmanager
def captured_transformers_log():
    """Collects what transformers logs (missing-weights warnings etc.) and Python warnings."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield stream, caught
        finally:
            logger.removeHandler(handler)


def hf_load(folder, remote=REMOTE):
    """AutoModel.from_pretrained with loading info; returns (model, info, log text)."""
    with captured_transformers_log() as (stream, caught):
        model, info = AutoModel.from_pretrained(str(folder), output_loading_info=True,
                                                trust_remote_code=remote)
    log = stream.getvalue().strip()
    notes = [str(w.message) for w in caught]
    return model.eval(), info, log, notes


def hf_heads(model):
    return [int(layer.attention.self.num_attention_heads) for layer in model.encoder.layer]


def hf_params(model):
    return int(sum(p.numel() for p in model.parameters()))


def st_embed(folder, texts, remote=REMOTE):
    st = SentenceTransformer(str(folder), device="cpu", trust_remote_code=remote)
    emb = st.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False)
    return st, np.asarray(emb, dtype=np.float64)


def cosines(a, b):
    if a.shape != b.shape:
        raise CheckFailed(f"embedding shapes differ: headprune {a.shape}, reference {b.shape}")
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    return (a * b).sum(axis=1) / np.maximum(na * nb, 1e-30)


def check_cosines(case, cos, texts, threshold, ours=None, ref=None):
    case.min_cos = float(cos.min())
    if ours is not None and ref is not None:
        case.max_diff = float(np.abs(ours - ref).max())
    bad = np.nonzero(cos < threshold)[0]
    if len(bad):
        worst = ", ".join(f"#{i} {cos[i]:.7f} {texts[i][:40]!r}" for i in bad[:5])
        raise CheckFailed(f"{len(bad)}/{len(cos)} cosines < {threshold}: {worst}")


def check_loadable_and_matching(case, folder, exe, texts, text_file, work, threshold, tag):
    """The checks every pruned folder without a zero-head layer must pass."""
    insp = headprune_inspect(exe, folder)
    model, info, log, _ = hf_load(folder)
    problems = {k: info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                         "error_msgs") if info.get(k)}
    if problems:
        raise CheckFailed(f"AutoModel.from_pretrained({folder.name}) loading info not clean: "
                          f"{problems}\n{log}")
    if "newly initialized" in log or "not used when initializing" in log:
        raise CheckFailed(f"transformers warned while loading {folder.name}:\n{log}")
    heads = hf_heads(model)
    if heads != insp["heads_per_layer"]:
        raise CheckFailed(f"heads per layer: transformers {heads}, headprune inspect "
                          f"{insp['heads_per_layer']}")
    params = hf_params(model)
    if params != insp["parameters"]:
        raise CheckFailed(f"parameters: transformers {params}, headprune inspect {insp['parameters']}")
    case.notes.append(f"heads {heads}, {params} params")
    del model
    check_other_route(case, folder, heads)

    ours = headprune_embed(exe, folder, text_file, work, tag)
    st, ref = st_embed(folder, texts)
    st_heads = hf_heads(st[0].auto_model)
    if st_heads != insp["heads_per_layer"]:
        raise CheckFailed(f"heads per layer in sentence-transformers' model: {st_heads}, "
                          f"headprune {insp['heads_per_layer']}")
    check_cosines(case, cosines(ours, ref), texts, threshold, ours, ref)


def check_other_route(case, folder, heads):
    """4.x: the remote code loads the folder too, with the same heads. 5.x: the built-in
    BertModel must refuse the folder (the expected failure the remote code exists for)."""
    if REMOTE:
        try:
            with captured_transformers_log():
                AutoModel.from_pretrained(str(folder))
        except Exception as e:  # noqa: BLE001 - any refusal is the expected outcome
            case.notes.append(f"without trust_remote_code: refused as expected "
                              f"({type(e).__name__}: {str(e).splitlines()[0][:70]})")
            return
        raise CheckFailed("transformers 5 loaded the pruned folder without remote code: it "
                          "cannot hold per-layer heads, so it must have changed the model")
    model, _, _, _ = hf_load(folder, remote=True)
    if hf_heads(model) != heads or "modeling_headprune_bert" not in type(model).__module__:
        raise CheckFailed(f"trust_remote_code=True on {transformers.__version__} built "
                          f"{type(model).__module__} with heads {hf_heads(model)}")
    case.notes.append("trust_remote_code=True loads it too (headprune's modeling file)")


# --------------------------------------------------------------------------------------------
# cases


def case_classifier(case, exe, model_dir, work):
    sys.path.insert(0, str(REPO / "tools"))
    from make_classifier_fixture import compose  # noqa: E402 - the fixture's own recipe

    fixtures = REPO / "tests" / "fixtures" / "minilm"
    head = load_file(str(fixtures / "sst2_classifier.safetensors"))
    reference = json.loads((fixtures / "sst2_reference.json").read_text(encoding="utf-8"))
    dense = work / "classifier"
    compose(model_dir, {k: torch.from_numpy(v) for k, v in head.items()}, dense)
    pruned = work / "classifier-pruned"
    headprune_apply(exe, dense, UNEVEN, pruned)
    with captured_transformers_log() as (stream, _):
        model, info = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(pruned), output_loading_info=True, trust_remote_code=REMOTE)
    problems = {k: info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                         "error_msgs") if info.get(k)}
    if problems:
        raise CheckFailed(f"{type(model).__name__} loading info not clean: {problems}\n"
                          f"{stream.getvalue()}")
    tok = transformers.AutoTokenizer.from_pretrained(str(pruned))
    texts = reference["texts"]
    with torch.no_grad():
        batch = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        predicted = model.eval()(**batch).logits.argmax(1).tolist()
    labelled = work / "classifier.tsv"
    labelled.write_text("sentence\tlabel\n" + "".join(f"{t}\t{p}\n" for t, p in zip(texts, predicted)),
                        encoding="utf-8")
    proc = run_headprune(["eval", pruned, "--classification", labelled, "--json"], exe, "headprune eval")
    accuracy = json.loads(proc.stdout)["classification"]["accuracy"]
    if accuracy != 1.0:
        raise CheckFailed(f"headprune agrees with transformers on {accuracy:.0%} of the texts")
    case.notes.append(f"{type(model).__name__} heads {hf_heads(model.bert)}; predictions agree "
                      f"on {len(texts)} texts")


def check_greedy(exe, folder, reference_ids, steps, reference_name):
    """`headprune generate --temperature 0` from BOS must give `reference_ids`' tokens; returns
    (number of tokens compared, headprune's stdout)."""
    proc = run_headprune(["--log-level", "debug", "generate", folder, "--temperature", "0",
                          "--max-new-tokens", str(steps)], exe, "headprune generate")
    ours = [line for line in proc.stderr.splitlines() if "token ids:" in line]
    if not ours:
        raise CheckFailed(f"headprune generate printed no token ids:\n{proc.stderr}")
    our_ids = [int(t) for t in ours[-1].split("token ids:")[1].split()]
    if len(our_ids) < 2 or our_ids != reference_ids[:len(our_ids)]:
        raise CheckFailed(f"greedy ids differ:\n  {reference_name:<12} {reference_ids}\n  headprune    {our_ids}")
    return len(our_ids) - 1, proc.stdout


def case_llama(case, exe, stories, work):
    if not (stories / "stories260K.bin").is_file():
        raise CheckFailed(f"{stories}/stories260K.bin not found: give --stories or set "
                          "HEADPRUNE_SHARED_DATA")
    converted = work / "stories"
    run_headprune(["convert-llama2c", stories / "stories260K.bin", "--tokenizer",
                   stories / "tok512.bin", "--out", converted], exe, "headprune convert-llama2c")
    pruned = work / "stories-uniform"
    headprune_apply(exe, converted, LLAMA_UNIFORM, pruned)
    config = json.loads((pruned / "config.json").read_text())
    shape = (config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"])
    if shape != (4, 4, 8):
        raise CheckFailed(f"config (heads, kv heads, head_dim) = {shape}, expected (4, 4, 8)")
    with captured_transformers_log() as (stream, _):
        model, info = transformers.LlamaForCausalLM.from_pretrained(str(pruned), output_loading_info=True)
    problems = {k: info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                         "error_msgs") if info.get(k)}
    if problems:
        raise CheckFailed(f"LlamaForCausalLM loading info not clean: {problems}\n{stream.getvalue()}")
    count, text = check_greedy(exe, pruned, greedy_ids(model, 40), 40, "transformers")
    case.notes.append(f"{count} greedy tokens identical; text: {text.strip()[:60]!r}")


def case_smollm2(case, exe, gguf, work):
    """convert-gguf's folder of SmolLM2-135M-Instruct: transformers loads it with no extra file
    (LlamaForCausalLM, AutoTokenizer with the chat template), its chat-prompt ids equal
    headprune's, and greedy decoding gives headprune's tokens."""
    if not gguf.is_file():
        raise CheckFailed(f"{gguf} not found: run scripts/fetch-model SmolLM2-135M-Instruct")
    folder = work / "smollm2"
    run_headprune(["convert-gguf", gguf, "--out", folder], exe, "headprune convert-gguf")
    check_chat_folder(case, exe, folder)


def check_chat_folder(case, exe, folder):
    """An HF LLaMA chat folder headprune wrote (convert-gguf, or a uniform prune of one):
    LlamaForCausalLM loads it with no extra file and clean loading info, AutoTokenizer gives
    headprune's ChatML prompt ids, and greedy decoding gives `generate --chat`'s tokens."""
    with captured_transformers_log() as (stream, _):
        model, info = transformers.LlamaForCausalLM.from_pretrained(str(folder), output_loading_info=True)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    problems = {k: info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                         "error_msgs") if info.get(k)}
    if problems:
        raise CheckFailed(f"LlamaForCausalLM loading info not clean: {problems}\n{stream.getvalue()}")
    question = "What is the capital of France?"
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                           tokenize=True)
    prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
    with torch.no_grad():
        ref = model.eval().generate(torch.tensor([prompt]), max_new_tokens=24, do_sample=False)[0].tolist()
    proc = run_headprune(["--log-level", "debug", "generate", folder, "--chat", "--prompt", question,
                          "--temperature", "0", "--max-new-tokens", "24"], exe, "headprune generate --chat")
    ours = [line for line in proc.stderr.splitlines() if "token ids:" in line]
    if not ours:
        raise CheckFailed(f"headprune generate printed no token ids:\n{proc.stderr}")
    our_ids = [int(t) for t in ours[-1].split("token ids:")[1].split()]
    if our_ids[:len(prompt)] != prompt:
        raise CheckFailed(f"chat prompt ids differ:\n  transformers {prompt}\n  headprune    {our_ids[:len(prompt)]}")
    eos = tokenizer.eos_token_id
    ref_answer = [t for t in ref[len(prompt):] if t != eos]
    if our_ids[len(prompt):] != ref_answer:
        raise CheckFailed(f"greedy answers differ:\n  transformers {ref_answer}\n  headprune    {our_ids[len(prompt):]}")
    case.notes.append(f"{len(ref_answer)} greedy tokens identical; answer {proc.stdout.strip()!r}")


def greedy_ids(model, steps):
    """transformers' greedy decoding of `steps` tokens from BOS (id 1)."""
    with torch.no_grad():
        return model.eval().generate(torch.tensor([[1]]), max_new_tokens=steps, do_sample=False,
                                     pad_token_id=0)[0].tolist()


def remote_llama(folder, class_name="HeadpruneLlamaForCausalLM"):
    """AutoModelForCausalLM with trust_remote_code=True: must build headprune's class
    `class_name` and load every tensor (no missing / unexpected / mismatched keys)."""
    with captured_transformers_log() as (stream, _):
        model, info = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder), trust_remote_code=True, output_loading_info=True)
    problems = {k: info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                         "error_msgs") if info.get(k)}
    if type(model).__name__ != class_name or problems:
        raise CheckFailed(f"remote code: {type(model).__name__}, loading info {problems}\n{stream.getvalue()}")
    return model


def native_llama_refused(folder, model_class=None):
    """transformers' own `model_class` (default LlamaForCausalLM) on a folder it cannot build:
    the first line of its error, or None when it loaded."""
    try:
        with captured_transformers_log():
            (model_class or transformers.LlamaForCausalLM).from_pretrained(str(folder))
    except Exception as e:  # noqa: BLE001 - the refusal the export announced
        return str(e).strip().splitlines()[0][:70]
    return None


def case_llama_indivisible(case, exe, stories, work):
    """KV group 3 (query heads 6, 7) removed in every layer: 6 query heads, 3 KV heads,
    head_dim 8, hidden 64. apply must warn that transformers 5 refuses it natively; 4.x must
    load it natively, 5.x must refuse it natively (LlamaConfig: hidden % heads != 0); both must
    load it with trust_remote_code=True; every route decodes 20 greedy tokens as headprune does."""
    converted = work / "stories"
    if not (converted / "config.json").is_file():
        raise CheckFailed("needs the converted 'stories' folder, which was not written")
    pruned = work / "stories-6-heads"
    proc = headprune_apply(exe, converted, {str(l): [6, 7] for l in range(5)}, pruned)
    if "transformers 5" not in proc.stderr or "trust_remote_code" not in proc.stderr:
        raise CheckFailed(f"apply did not warn that transformers 5 needs remote code for 6 heads:\n{proc.stderr}")
    if REMOTE:
        refusal = native_llama_refused(pruned)
        if refusal is None:
            raise CheckFailed("transformers 5 loaded 6 heads with hidden 64 natively; update the warning")
        case.notes.append(f"native: refused as apply announced ({refusal})")
    else:
        with captured_transformers_log():
            model = transformers.LlamaForCausalLM.from_pretrained(str(pruned))
        count, _ = check_greedy(exe, pruned, greedy_ids(model, 20), 20, "transformers")
        case.notes.append(f"native: {count} greedy tokens identical")
    count, _ = check_greedy(exe, pruned, greedy_ids(remote_llama(pruned), 20), 20, "remote code")
    case.notes.append(f"remote code: {count} greedy tokens identical")


def case_llama_uneven(case, exe, work):
    """Uneven layers (5, 8, 0, 8, 4 query heads; layer 2 empty): transformers' own
    LlamaForCausalLM cannot build it (expected failure on every version); trust_remote_code=True
    loads it cleanly and decodes 40 greedy tokens as headprune does."""
    converted = work / "stories"
    if not (converted / "config.json").is_file():
        raise CheckFailed("needs the converted 'stories' folder, which was not written")
    pruned = work / "stories-uneven-empty"
    headprune_apply(exe, converted, {"0": [0, 1, 2], "2": list(range(8)), "4": [1, 3, 5, 7]}, pruned)
    refusal = native_llama_refused(pruned)
    if refusal is None:
        raise CheckFailed("transformers' LlamaForCausalLM loaded uneven layers; update the export note")
    case.notes.append(f"native: refused (expected: {refusal})")
    count, text = check_greedy(exe, pruned, greedy_ids(remote_llama(pruned), 40), 40, "remote code")
    case.notes.append(f"remote code: {count} greedy tokens identical; text: {text.strip()[:40]!r}")


DECODER_PROMPT = "The king said"


def decoder_greedy(exe, folder, model, steps=16):
    """transformers' greedy decoding (its KV cache) of `steps` tokens after DECODER_PROMPT, tokenized
    by the folder's tokenizer.json (the `tokenizers` library), against `headprune generate`;
    returns the number of new tokens compared."""
    from tokenizers import Tokenizer  # noqa: E402 - a dependency of transformers
    prompt = Tokenizer.from_file(str(Path(folder) / "tokenizer.json")).encode(DECODER_PROMPT).ids
    with torch.no_grad():
        ref = model.eval().generate(torch.tensor([prompt]), max_new_tokens=steps, do_sample=False,
                                    eos_token_id=None, pad_token_id=0)[0].tolist()
    proc = run_headprune(["--log-level", "debug", "generate", folder, "--prompt", DECODER_PROMPT,
                          "--temperature", "0", "--max-new-tokens", str(steps)], exe, "headprune generate")
    ours = [line for line in proc.stderr.splitlines() if "token ids:" in line]
    if not ours:
        raise CheckFailed(f"headprune generate printed no token ids:\n{proc.stderr}")
    our_ids = [int(t) for t in ours[-1].split("token ids:")[1].split()]
    if our_ids != ref[:len(our_ids)] or len(our_ids) <= len(prompt):
        raise CheckFailed(f"greedy ids differ:\n  transformers {ref}\n  headprune    {our_ids}")
    return len(our_ids) - len(prompt)


# The fixtures' HF class stems (tests/fixtures/<family>, tools/make_decoder_fixtures.py).
DECODER_CLASSES = {"qwen2": "Qwen2", "qwen3": "Qwen3", "mistral": "Mistral", "phi3": "Phi3", "gemma3": "Gemma3",
                   "llama3": "Llama"}
# Families whose transformers 4.x class takes the head size as hidden_size / heads.
HEAD_DIM_FROM_HIDDEN_IN_4 = {"qwen2", "phi3"}
# Fixtures export-gguf writes as is (Mistral's and Phi-3's window of 8 and Gemma's layer pattern
# are refused, as llama.cpp would compute them differently).
GGUF_ROUND_TRIP = {"qwen2", "qwen3"}


def check_gguf_round_trip(case, exe, folder, native, work, tag):
    """`export-gguf` of `folder`, then `convert-gguf` of the file (both in `work`): the folder it
    gives loads in transformers' own class and decodes as headprune does."""
    gguf = work / f"{tag}.gguf"
    converted = work / f"{tag}-from-gguf"
    run_headprune(["export-gguf", str(folder), "-o", str(gguf), "--force"], exe, "export-gguf")
    run_headprune(["convert-gguf", str(gguf), "-o", str(converted), "--force"], exe, "convert-gguf")
    with captured_transformers_log():
        model = native.from_pretrained(str(converted))
    case.notes.append(f"{tag} export-gguf -> convert-gguf, native: {decoder_greedy(exe, converted, model)} identical")


def case_decoder_family(case, exe, work, family):
    """A decoder fixture transformers 5.24 made (tests/fixtures/<family>: Qwen2, Qwen3, Mistral,
    Phi-3), dense, uniformly pruned (2 of 4 heads per layer) and unevenly pruned (3, 4, 2 heads).
    Dense and uniform load in transformers' own class (Qwen3ForCausalLM exists from 4.51: that
    case runs in the current environment only), except a Qwen2 / Phi-3 uniform prune in 4.x,
    whose class takes the head size as hidden / heads (2 x 16 != 64): refused natively as the
    export note says, and loaded with trust_remote_code=True (the export carries the code for
    it). Uneven: remote code only. Qwen2 / Qwen3: dense and (where native) uniform also through
    export-gguf and convert-gguf. Every route decodes 16 greedy tokens as headprune does (past
    Mistral's and Phi-3's window of 8)."""
    fixture = REPO / "tests" / "fixtures" / family
    native = getattr(transformers, f"{DECODER_CLASSES[family]}ForCausalLM")
    remote_class = f"Headprune{DECODER_CLASSES[family]}ForCausalLM"
    with captured_transformers_log():
        dense = native.from_pretrained(str(fixture))
    case.notes.append(f"dense native: {decoder_greedy(exe, fixture, dense)} greedy tokens identical")
    if family in GGUF_ROUND_TRIP:
        check_gguf_round_trip(case, exe, fixture, native, work, f"{family}-dense")
    uniform = work / f"{family}-uniform"
    headprune_apply(exe, fixture, {"0": [0, 2], "1": [1, 3], "2": [0, 3]}, uniform)
    if REMOTE or family not in HEAD_DIM_FROM_HIDDEN_IN_4:
        with captured_transformers_log():
            model = native.from_pretrained(str(uniform))
        case.notes.append(f"uniform native: {decoder_greedy(exe, uniform, model)} identical")
        if family in GGUF_ROUND_TRIP:  # Qwen2's: written as llama.cpp's `llama`, read back as Qwen2
            check_gguf_round_trip(case, exe, uniform, native, work, f"{family}-uniform")
    else:
        refusal = native_llama_refused(uniform, native)
        if refusal is None:
            raise CheckFailed("transformers 4 loaded 2 heads of 16 with hidden 64 natively; update the export note")
        case.notes.append(f"uniform native: refused ({refusal})")
    if (uniform / "modeling_headprune_llama.py").is_file():
        remote = remote_llama(uniform, remote_class)
        case.notes.append(f"uniform remote code: {decoder_greedy(exe, uniform, remote)} identical")
    uneven = work / f"{family}-uneven"
    headprune_apply(exe, fixture, {"0": [1], "2": [0, 1]}, uneven)
    if native_llama_refused(uneven, native) is None:
        raise CheckFailed(f"transformers' {native.__name__} loaded uneven layers; update the export note")
    remote = remote_llama(uneven, remote_class)
    case.notes.append(f"uneven remote code: {decoder_greedy(exe, uneven, remote)} identical")


def require_clean_load(info, log, what):
    """Raises CheckFailed unless from_pretrained's loading info and log show a clean load: no
    missing / unexpected / mismatched keys, no errors, nothing newly initialised."""
    problems = {k: info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")
                if info.get(k)}
    if problems or "newly initialized" in log:
        raise CheckFailed(f"{what} not clean: {problems}\n{log}")


def require_native_refusal(case, out):
    """transformers 5's own class must refuse a folder with per-layer heads (it would build every
    layer with all heads); the refusal is noted on `case`."""
    try:
        with captured_transformers_log():
            AutoModel.from_pretrained(str(out))
    except Exception as e:  # noqa: BLE001 - any refusal is the expected outcome
        case.notes.append(f"without trust_remote_code: refused ({type(e).__name__})")
    else:
        raise CheckFailed(f"transformers 5 loaded {out.name} without remote code: it cannot hold per-layer heads, "
                          "so it must have changed the model")


def fixture_texts(name, work):
    """tests/fixtures/<name>/texts.json and a one-per-line file of them for `headprune embed`."""
    texts = json.loads((REPO / "tests" / "fixtures" / name / "texts.json").read_text(encoding="utf-8"))
    text_file = work / f"{name}-texts.txt"
    text_file.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return texts, text_file


def case_distilbert(case, exe, work):
    """A DistilBERT pruned unevenly (tests/fixtures/distilbert, made by transformers 5.24):
    transformers 4.x loads the export natively (pruned_heads), transformers 5 through headprune's
    remote code (its own DistilBertModel must refuse the folder); either way clean, with
    headprune's heads, and sentence-transformers' mean pooling over it equals `headprune embed`."""
    fixture = REPO / "tests" / "fixtures" / "distilbert"
    texts, text_file = fixture_texts("distilbert", work)
    out = work / "distilbert-uneven"
    headprune_apply(exe, fixture, {"0": [1], "2": [0, 1, 3]}, out)
    if REMOTE:
        require_native_refusal(case, out)
    model, info, log, _ = hf_load(out)
    require_clean_load(info, log, "AutoModel.from_pretrained(distilbert-uneven)")
    heads = [int(layer.attention.n_heads) for layer in model.transformer.layer]
    insp = headprune_inspect(exe, out)
    if heads != insp["heads_per_layer"] or hf_params(model) != insp["parameters"]:
        raise CheckFailed(f"{type(model).__name__}: heads {heads}, {hf_params(model)} parameters; headprune "
                          f"{insp['heads_per_layer']}, {insp['parameters']}")
    ours = headprune_embed(exe, out, text_file, work, "distilbert")
    _, ref = st_embed(out, texts)
    check_cosines(case, cosines(ours, ref), texts, 0.99999, ours, ref)
    case.notes.append(f"{type(model).__name__} heads {heads}; embeddings max |diff| {case.max_diff:.2e}")


def native_mpnet(folder, texts, pruned):
    """In a fresh Python process (loading remote code registers its class for MPNetConfig in this
    one): the dense folder's sentence-transformers embeddings through transformers' own
    MPNetModel, or, for a pruned folder, how that class fails on it (4.x loads it, pruning
    q/k/v/o, and fails in the forward pass, where the shared relative bias still has every head;
    5.x refuses the weights' shapes) - None if it does not."""
    script = """
import json, sys
import numpy as np
folder, pruned, texts = sys.argv[1], sys.argv[2] == "1", json.loads(sys.stdin.read())
if pruned:
    import torch
    from transformers import AutoModel, AutoTokenizer
    batch = AutoTokenizer.from_pretrained(folder)(texts[:2], padding=True, return_tensors="pt")
    try:
        with torch.no_grad():
            AutoModel.from_pretrained(folder).eval()(**batch)
    except Exception as e:
        print(json.dumps(type(e).__name__))
    else:
        print(json.dumps(None))
else:
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(folder, device="cpu")
    emb = st.encode(texts, batch_size=16, convert_to_numpy=True, show_progress_bar=False)
    print(json.dumps({"class": type(st[0].auto_model).__name__, "emb": np.asarray(emb, np.float64).tolist()}))
"""
    proc = subprocess.run([sys.executable, "-c", script, str(folder), "1" if pruned else "0"], input=json.dumps(texts),
                          capture_output=True, text=True, encoding="utf-8")
    if proc.returncode != 0:
        raise CheckFailed(f"the native-class check of {folder.name} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def case_mpnet(case, exe, folder, texts, text_file, work, tag, remove):
    """An MPNet folder dense (transformers' own MPNetModel, sentence-transformers vs `headprune
    embed`) and pruned by `remove`: the native class fails on it (both versions: the export note
    says so), trust_remote_code=True loads headprune's modeling file cleanly with headprune's heads
    and parameters, and sentence-transformers over it equals `headprune embed`."""
    dense_ours = headprune_embed(exe, folder, text_file, work, f"{tag}-dense")
    dense = native_mpnet(folder, texts, pruned=False)
    dense_ref = np.asarray(dense["emb"], np.float64)
    check_cosines(case, cosines(dense_ours, dense_ref), texts, 0.99999, dense_ours, dense_ref)
    case.notes.append(f"dense: embeddings max |diff| {case.max_diff:.2e} vs {dense['class']}")
    out = work / f"{tag}-uneven"
    headprune_apply(exe, folder, remove, out)
    failure = native_mpnet(out, texts, pruned=True)
    if failure is None:
        raise CheckFailed("transformers' own MPNetModel ran the pruned folder: the export note says it cannot")
    model, info, log, _ = hf_load(out, remote=True)
    require_clean_load(info, log, f"AutoModel.from_pretrained({out.name}, trust_remote_code=True)")
    insp = headprune_inspect(exe, out)
    heads = [int(layer.attention.attn.num_heads) for layer in model.encoder.layer]
    if heads != insp["heads_per_layer"] or hf_params(model) != insp["parameters"]:
        raise CheckFailed(f"{type(model).__name__}: heads {heads}, {hf_params(model)} parameters; headprune "
                          f"{insp['heads_per_layer']}, {insp['parameters']}")
    ours = headprune_embed(exe, out, text_file, work, f"{tag}-uneven")
    st = SentenceTransformer(str(out), device="cpu", trust_remote_code=True)
    ref = np.asarray(st.encode(texts, batch_size=16, convert_to_numpy=True, show_progress_bar=False), np.float64)
    check_cosines(case, cosines(ours, ref), texts, 0.99999, ours, ref)
    case.notes.append(f"pruned: native {failure}; {type(model).__name__} heads {heads}; embeddings max |diff| "
                      f"{case.max_diff:.2e}")


# Each classifier fixture's uneven prune (3 layers of 4 heads), one under which transformers'
# predictions on the fixture's texts still span two classes or more (its head was fitted to the
# dense encoder's states; most prunes move every text to one class, where agreement proves less).
CLASSIFIER_UNEVEN = {"distilbert": {"2": [1]}, "mpnet": {"2": [1]}, "roberta": {"1": [0], "2": [2]},
                     "xlm_roberta": {"0": [3], "1": [1, 2]}, "modernbert": {"0": [2], "1": [0, 3]}}


def hf_query_heads(model):
    """Heads per layer of any BERT-style encoder under `model`: its query projections' rows over
    head_dim (BERT / RoBERTa `query`, DistilBERT `q_lin`, MPNet `attn.q`; ModernBERT's fused
    `attn.Wqkv` holds three rows per query row)."""
    head_dim = model.config.hidden_size // model.config.num_attention_heads
    rows = {}
    for key, p in model.named_parameters():
        m = re.search(r"layers?\.(\d+)\..*\.(query|q_lin|q|Wqkv)\.weight$", key)
        if m:
            rows[int(m.group(1))] = p.shape[0] // head_dim // (3 if m.group(2) == "Wqkv" else 1)
    return [rows[layer] for layer in sorted(rows)]


def case_encoder_classifier(case, exe, work, name):
    """tests/fixtures/<name>_classifier pruned by CLASSIFIER_UNEVEN[name]: AutoModelForSequenceClassification
    loads it cleanly (trust_remote_code in transformers 5, and for MPNet and ModernBERT in 4 as well) with
    headprune's heads; `headprune eval --classification` on its predictions for the fixture's texts
    scores 1.0 (the predictions span two classes at least, so a wrong head would show); with
    onnxruntime, the ONNX export's logits are within 1e-4 of transformers'."""
    fixture = REPO / "tests" / "fixtures" / f"{name}_classifier"
    texts = json.loads((fixture / "texts.json").read_text(encoding="utf-8"))
    out = work / f"{name}-classifier-uneven"
    headprune_apply(exe, fixture, CLASSIFIER_UNEVEN[name], out)
    remote = REMOTE or name in ("mpnet", "modernbert")
    with captured_transformers_log() as (stream, _):
        model, info = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(out), output_loading_info=True, trust_remote_code=remote)
    require_clean_load(info, stream.getvalue(), f"AutoModelForSequenceClassification.from_pretrained({out.name})")
    if ("modeling_headprune" in type(model).__module__) != remote:
        raise CheckFailed(f"built {type(model).__module__}.{type(model).__name__} (trust_remote_code={remote})")
    heads = hf_query_heads(model)
    if heads != headprune_inspect(exe, out)["heads_per_layer"]:
        raise CheckFailed(f"{type(model).__name__} heads {heads}; headprune {headprune_inspect(exe, out)['heads_per_layer']}")
    tok = transformers.AutoTokenizer.from_pretrained(str(out))
    with torch.no_grad():
        logits = model.eval()(**tok(texts, padding=True, return_tensors="pt")).logits.numpy()
    predicted = logits.argmax(1).tolist()
    if len(set(predicted)) < 2:
        raise CheckFailed(f"transformers predicts one class for every text ({predicted}): the check could not fail")
    top2 = np.sort(logits, axis=1)[:, -2:]
    if (top2[:, 1] - top2[:, 0]).min() < 1e-3:  # float32 noise could flip such a text either way
        raise CheckFailed(f"a text's two best logits are within 1e-3 ({logits.tolist()}): pick another prune")
    labelled = work / f"{name}-classifier.tsv"
    labelled.write_text("".join(f"{t}\t{model.config.id2label[p]}\n" for t, p in zip(texts, predicted)), encoding="utf-8")
    proc = run_headprune(["eval", out, "--classification", labelled, "--json"], exe, "headprune eval")
    accuracy = json.loads(proc.stdout)["classification"]["accuracy"]
    if accuracy != 1.0:
        raise CheckFailed(f"headprune agrees with transformers' {type(model).__name__} on {accuracy:.0%} of the texts")
    case.notes.append(f"{type(model).__name__} heads {heads}; predictions {predicted} agree")
    if HAVE_ORT:
        onnx_file = work / f"{name}-classifier.onnx"
        run_headprune(["export-onnx", out, "-o", onnx_file], exe, "headprune export-onnx")
        batch = dict(tok(texts, padding=True, return_tensors="np"))
        batch.setdefault("token_type_ids", np.zeros_like(batch["input_ids"]))  # RoBERTa's graph has the input, its tokenizer not
        ours = ort_run(ort_session(onnx_file), batch)["logits"]
        check_max_diff(case, "ONNX Runtime logits vs transformers", ours, logits)
        case.notes.append(f"ONNX Runtime logits max |diff| {case.max_diff:.2e}")


# The real all-mpnet-base-v2's uneven prune (12 layers of 12 heads): 13 heads, layer 11 emptied.
MPNET_UNEVEN = {"0": [0, 1, 2], "3": [5], "6": [0, 2, 4, 6, 8, 10], "11": list(range(12))}


def case_mpnet_fixture(case, exe, work):
    """case_mpnet on tests/fixtures/mpnet (made by transformers 5.24), a layer emptied."""
    fixture = REPO / "tests" / "fixtures" / "mpnet"
    texts, text_file = fixture_texts("mpnet", work)
    case_mpnet(case, exe, fixture, texts, text_file, work, "mpnet", {"0": [0, 2], "1": [0, 1, 2, 3]})


# The RoBERTa / XLM-R fixtures' uneven prune (3 layers of 4 heads), layer 2 emptied.
ROBERTA_UNEVEN = {"1": [1, 2], "2": [0, 1, 2, 3]}


def case_roberta(case, exe, work, name):
    """tests/fixtures/<name> (roberta: byte-level BPE; xlm_roberta: Unigram; made by
    transformers 5.24) dense: sentence-transformers (mean pooling) over transformers' own class vs
    `headprune embed`; pruned unevenly with a layer emptied: transformers 4.x loads it natively
    (pruned_heads), 5.x only with trust_remote_code=True (modeling_headprune_roberta.py and the
    BERT file it imports; its own class must refuse the folder); the load is clean, heads and
    parameters equal headprune's, and sentence-transformers over it equals `headprune embed`."""
    fixture = REPO / "tests" / "fixtures" / name
    texts, text_file = fixture_texts(name, work)
    dense_ours = headprune_embed(exe, fixture, text_file, work, f"{name}-dense")
    st, dense_ref = st_embed(fixture, texts)
    check_cosines(case, cosines(dense_ours, dense_ref), texts, 0.99999, dense_ours, dense_ref)
    case.notes.append(f"dense: {type(st[0].auto_model).__name__}, embeddings max |diff| {case.max_diff:.2e}")
    out = work / f"{name}-uneven"
    headprune_apply(exe, fixture, ROBERTA_UNEVEN, out)
    if REMOTE:
        require_native_refusal(case, out)
    model, info, log, _ = hf_load(out)
    require_clean_load(info, log, f"AutoModel.from_pretrained({out.name})")
    heads = [int(layer.attention.self.num_attention_heads) for layer in model.encoder.layer]
    insp = headprune_inspect(exe, out)
    if heads != insp["heads_per_layer"] or hf_params(model) != insp["parameters"]:
        raise CheckFailed(f"{type(model).__name__}: heads {heads}, {hf_params(model)} parameters; headprune "
                          f"{insp['heads_per_layer']}, {insp['parameters']}")
    ours = headprune_embed(exe, out, text_file, work, f"{name}-uneven")
    _, ref = st_embed(out, texts)
    check_cosines(case, cosines(ours, ref), texts, 0.99999, ours, ref)
    case.notes.append(f"pruned: {type(model).__name__} heads {heads}; embeddings max |diff| {case.max_diff:.2e}")


MODERNBERT_UNEVEN = {"0": [1], "1": [0, 1, 2, 3], "2": [0, 2]}


def case_modernbert(case, exe, work):
    """tests/fixtures/modernbert (made by transformers 5.24) dense: sentence-transformers (mean
    pooling) over transformers' own ModernBertModel vs `headprune embed` (5.x; 4.46 has no
    ModernBERT); pruned unevenly with the local layer emptied: no transformers class loads it
    without remote code (5.x's sizes heads from hidden_size, 4.46 has none), with
    trust_remote_code=True (modeling_headprune_modernbert.py) both versions load it cleanly, with
    headprune's heads and parameters, and sentence-transformers over it equals `headprune embed`."""
    fixture = REPO / "tests" / "fixtures" / "modernbert"
    texts, text_file = fixture_texts("modernbert", work)
    if REMOTE:
        dense_ours = headprune_embed(exe, fixture, text_file, work, "modernbert-dense")
        st, dense_ref = st_embed(fixture, texts, remote=False)
        check_cosines(case, cosines(dense_ours, dense_ref), texts, 0.99999, dense_ours, dense_ref)
        case.notes.append(f"dense: {type(st[0].auto_model).__name__}, embeddings max |diff| {case.max_diff:.2e}")
    out = work / "modernbert-uneven"
    headprune_apply(exe, fixture, MODERNBERT_UNEVEN, out)
    require_native_refusal(case, out)
    model, info, log, _ = hf_load(out, remote=True)
    require_clean_load(info, log, f"AutoModel.from_pretrained({out.name}, trust_remote_code=True)")
    heads = [int(layer.attn.num_heads) for layer in model.layers]
    insp = headprune_inspect(exe, out)
    if heads != insp["heads_per_layer"] or hf_params(model) != insp["parameters"]:
        raise CheckFailed(f"{type(model).__name__}: heads {heads}, {hf_params(model)} parameters; headprune "
                          f"{insp['heads_per_layer']}, {insp['parameters']}")
    ours = headprune_embed(exe, out, text_file, work, "modernbert-uneven")
    _, ref = st_embed(out, texts, remote=True)
    check_cosines(case, cosines(ours, ref), texts, 0.99999, ours, ref)
    case.notes.append(f"pruned: {type(model).__name__} heads {heads}; embeddings max |diff| {case.max_diff:.2e}")


def ort_session(path):
    import onnxruntime  # noqa: E402 - only in the current environment
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ort_run(session, batch):
    feeds = {i.name: np.asarray(batch[i.name], dtype=np.int64) for i in session.get_inputs()}
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def check_max_diff(case, what, ours, ref, mask=None, limit=1e-4):
    diff = np.abs(ours - ref) if mask is None else np.abs((ours - ref) * mask)
    case.max_diff = max(case.max_diff or 0.0, float(diff.max()))
    if diff.max() > limit:
        raise CheckFailed(f"{what}: max |diff| {diff.max():.2e} > {limit:g}")


def case_onnx_encoder(case, exe, folder, onnx_file, texts, text_file, work, threshold, tag, remote=REMOTE):
    """ONNX Runtime on headprune's ONNX of a pruned BERT folder: last_hidden_state within 1e-4 of
    transformers' (real tokens), sentence_embedding within cosine threshold of headprune embed."""
    session = ort_session(onnx_file)
    names = [o.name for o in session.get_outputs()]
    if names != ["last_hidden_state", "sentence_embedding"]:
        raise CheckFailed(f"ONNX outputs {names}")
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    batch = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="np")
    out = ort_run(session, batch)
    model, _, _, _ = hf_load(folder, remote=remote)
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(v) for k, v in batch.items()}).last_hidden_state.numpy()
    check_max_diff(case, "last_hidden_state vs transformers", out["last_hidden_state"], ref,
                   batch["attention_mask"][..., None])
    ours = headprune_embed(exe, folder, text_file, work, tag)
    check_cosines(case, cosines(out["sentence_embedding"].astype(np.float64), ours), texts, threshold)
    case.notes.append(f"ONNX Runtime: outputs {names}; {len(texts)} texts")


def case_onnx_minilm(case, exe, model_dir, texts, text_file, work, threshold):
    folder = work / "onnx-uneven"
    run_headprune(["apply", model_dir, "--remove-heads", json.dumps(UNEVEN), "--out", folder, "--onnx"],
                  exe, "headprune apply --onnx")
    case_onnx_encoder(case, exe, folder, folder / "onnx" / "model.onnx", texts, text_file, work,
                      threshold, "onnx-uneven")
    zero = work / "zero-head"
    if not (zero / "config.json").is_file():
        raise CheckFailed("needs the 'zero-head' folder, which was not written")
    onnx_file = work / "zero-head.onnx"
    run_headprune(["export-onnx", zero, "-o", onnx_file, "--external-data"], exe, "headprune export-onnx")
    if not (work / "zero-head.onnx_data").is_file():
        raise CheckFailed("export-onnx --external-data wrote no zero-head.onnx_data")
    case_onnx_encoder(case, exe, zero, onnx_file, texts, text_file, work, threshold, "onnx-zero")
    again = run_headprune(["export-onnx", zero, "-o", onnx_file], exe, "export-onnx again", expect_ok=False)
    if again.returncode != 1 or "exists" not in again.stderr:
        raise CheckFailed(f"export-onnx over an existing file: exit {again.returncode}, {again.stderr!r}")
    case.notes.append("uneven (apply --onnx) and zero-head (export-onnx --external-data); an existing --out refused")


def case_onnx_fixture(case, exe, work, name):
    """The uneven prune of tests/fixtures/<name> (written by case_distilbert / case_roberta) as
    ONNX: ONNX Runtime's last_hidden_state against transformers' (remote code on 5.x) on the
    fixture's padded batch (RoBERTa's positions count real tokens only); token_type_ids, where the
    model has them and the tokenizer gives none, are zeros as HF's default."""
    folder = work / f"{name}-uneven"
    if not (folder / "config.json").is_file():
        raise CheckFailed(f"needs the '{name}-uneven' folder, which was not written")
    texts = json.loads((REPO / "tests" / "fixtures" / name / "texts.json").read_text(encoding="utf-8"))
    onnx_file = work / f"{name}-uneven.onnx"
    onnx_file.unlink(missing_ok=True)
    run_headprune(["export-onnx", folder, "-o", onnx_file], exe, "headprune export-onnx")
    session = ort_session(onnx_file)
    inputs, outputs = [i.name for i in session.get_inputs()], [o.name for o in session.get_outputs()]
    if outputs != ["last_hidden_state"]:
        raise CheckFailed(f"ONNX inputs {inputs}, outputs {outputs}")
    batch = dict(transformers.AutoTokenizer.from_pretrained(str(folder))(texts, padding=True, return_tensors="np"))
    if "token_type_ids" in inputs and "token_type_ids" not in batch:
        batch["token_type_ids"] = np.zeros_like(batch["input_ids"])
    out = ort_run(session, batch)
    model, _, _, _ = hf_load(folder)
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(batch[k]) for k in inputs}).last_hidden_state.numpy()
    check_max_diff(case, "last_hidden_state vs transformers", out["last_hidden_state"], ref,
                   batch["attention_mask"][..., None])
    case.notes.append(f"ONNX Runtime vs {type(model).__name__}: inputs {inputs}")


def case_onnx_classifier(case, exe, work):
    folder = work / "classifier-pruned"
    if not (folder / "config.json").is_file():
        raise CheckFailed("needs the 'classifier-pruned' folder, which was not written")
    onnx_file = work / "classifier.onnx"
    run_headprune(["export-onnx", folder, "-o", onnx_file], exe, "headprune export-onnx")
    reference = json.loads((REPO / "tests/fixtures/minilm/sst2_reference.json").read_text(encoding="utf-8"))
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    batch = tok(reference["texts"], padding=True, truncation=True, max_length=256, return_tensors="np")
    out = ort_run(ort_session(onnx_file), batch)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(folder), trust_remote_code=REMOTE)
    with torch.no_grad():
        ref = model.eval()(**{k: torch.from_numpy(v) for k, v in batch.items()}).logits.numpy()
    check_max_diff(case, "classifier logits vs transformers", out["logits"], ref)
    case.notes.append(f"logits of {len(ref)} SST-2 texts")


def onnx_greedy(session, steps):
    ids = [1]
    for _ in range(steps):
        batch = {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), dtype=np.int64)}
        ids.append(int(ort_run(session, batch)["logits"][0, -1].argmax()))
    return ids


def case_onnx_llama(case, exe, work):
    uniform, converted = work / "stories-uniform", work / "stories"
    if not (uniform / "config.json").is_file():
        raise CheckFailed("needs the 'stories-uniform' folder, which was not written")
    onnx_file = work / "stories-uniform.onnx"
    run_headprune(["export-onnx", uniform, "-o", onnx_file], exe, "headprune export-onnx")
    batch = {"input_ids": np.array([[1, 403, 407, 261, 378, 280, 103, 418], [1, 403, 407, 261, 0, 0, 0, 0]]),
             "attention_mask": np.array([[1] * 8, [1] * 4 + [0] * 4])}
    out = ort_run(ort_session(onnx_file), batch)
    model = transformers.LlamaForCausalLM.from_pretrained(str(uniform)).eval()
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(v) for k, v in batch.items()}).logits.numpy()
    check_max_diff(case, "uniform LLaMA logits vs transformers", out["logits"], ref,
                   batch["attention_mask"][..., None])
    uneven = work / "stories-uneven"
    headprune_apply(exe, converted, {"0": [0, 1, 2], "2": [5], "4": [1, 3, 5, 7]}, uneven)
    run_headprune(["export-onnx", uneven, "-o", work / "stories-uneven.onnx"], exe, "headprune export-onnx")
    ids = onnx_greedy(ort_session(work / "stories-uneven.onnx"), 40)
    count, _ = check_greedy(exe, uneven, ids, 40, "ONNX Runtime")
    case.notes.append(f"uniform: logits vs transformers; uneven (5, 8, 7, 8, 4 heads): "
                      f"{count} greedy tokens identical")


def case_onnx_decoder(case, exe, work, family):
    """The unevenly pruned decoder fixture (Qwen2: q/k/v biases sliced; Qwen3: q/k norms;
    Mistral, Phi-3: a sliding window of 8, shorter than the batch) as ONNX: ONNX Runtime's logits
    against the remote-code model's in transformers, on a right-padded batch."""
    uneven = work / f"{family}-uneven"
    if not (uneven / "config.json").is_file():
        raise CheckFailed(f"needs the '{family}-uneven' folder, which was not written")
    onnx_file = work / f"{family}-uneven.onnx"
    run_headprune(["export-onnx", uneven, "-o", onnx_file], exe, "headprune export-onnx")
    row = [350, 372, 309, 263, 67, 361, 280, 47, 98, 211, 305, 66, 140, 77]
    batch = {"input_ids": np.array([row, row[:5] + [0] * 9]), "attention_mask": np.array([[1] * 14, [1] * 5 + [0] * 9])}
    out = ort_run(ort_session(onnx_file), batch)
    model = remote_llama(uneven, f"Headprune{DECODER_CLASSES[family]}ForCausalLM").eval()
    with torch.no_grad():
        ref = model(**{k: torch.from_numpy(v) for k, v in batch.items()}).logits.numpy()
    check_max_diff(case, f"uneven {family} logits vs transformers (remote code)", out["logits"], ref,
                   batch["attention_mask"][..., None])
    case.notes.append("uneven (3, 4, 2 heads): logits vs transformers")


def case_dense(case, exe, model_dir, texts, text_file, work, threshold):
    ours = headprune_embed(exe, model_dir, text_file, work, "dense")
    _, ref = st_embed(model_dir, texts)
    check_cosines(case, cosines(ours, ref), texts, threshold, ours, ref)


def case_uneven(case, exe, model_dir, texts, text_file, work, threshold):
    folder = work / "uneven"
    headprune_apply(exe, model_dir, UNEVEN, folder)
    check_loadable_and_matching(case, folder, exe, texts, text_file, work, threshold, "uneven")


# FFN neurons removed (positions among the layer's present ones): layer 0 every third, layer 2
# all of them (its FFN adds its output bias alone), layer 4 the first 700.
FFN_REMOVED = {"0": list(range(0, 1536, 3)), "2": list(range(1536)), "4": list(range(700))}


def case_ffn_uneven(case, exe, model_dir, texts, text_file, work, threshold):
    """Uneven FFN widths (one layer emptied) with uneven heads: transformers' own BertModel
    cannot build them (refused on every version); headprune's modelling code loads the folder
    cleanly with trust_remote_code=True in transformers 4 and 5, sentence-transformers embeds as
    headprune does (the ONNX export it also writes is "onnx FFN uneven")."""
    folder = work / "ffn-uneven"
    run_headprune(["apply", model_dir, "--remove-heads", json.dumps(UNEVEN), "--remove-ffn",
                   json.dumps(FFN_REMOVED), "--out", folder, "--onnx"], exe, "headprune apply --remove-ffn")
    insp = headprune_inspect(exe, folder)
    try:  # the class itself: AutoModel may map BertConfig to remote code an earlier case registered
        transformers.BertModel.from_pretrained(str(folder))
    except Exception as e:  # noqa: BLE001 - any refusal is the expected outcome
        case.notes.append(f"native: refused ({type(e).__name__})")
    else:
        raise CheckFailed("transformers' own BertModel loaded uneven FFN widths; update the export note")
    model, info, log, _ = hf_load(folder, remote=True)
    problems = {k: info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")
                if info.get(k)}
    if problems or "newly initialized" in log:
        raise CheckFailed(f"remote-code loading not clean: {problems}\n{log}")
    widths = [int(layer.intermediate.dense.out_features) for layer in model.encoder.layer]
    if widths != insp["intermediate_sizes"] or hf_heads(model) != insp["heads_per_layer"]:
        raise CheckFailed(f"FFN widths / heads: transformers {widths} / {hf_heads(model)}, headprune "
                          f"{insp['intermediate_sizes']} / {insp['heads_per_layer']}")
    if hf_params(model) != insp["parameters"]:
        raise CheckFailed(f"parameters: transformers {hf_params(model)}, headprune {insp['parameters']}")
    case.notes.append(f"FFN widths {widths}, {hf_params(model)} params")
    del model
    ours = headprune_embed(exe, folder, text_file, work, "ffn-uneven")
    _, ref = st_embed(folder, texts, remote=True)
    check_cosines(case, cosines(ours, ref), texts, threshold, ours, ref)


def case_onnx_ffn(case, exe, texts, text_file, work, threshold):
    """ONNX Runtime on the ONNX export of "FFN uneven" (an emptied FFN adds its output bias alone)."""
    folder = work / "ffn-uneven"
    if not (folder / "onnx" / "model.onnx").is_file():
        raise CheckFailed("needs the 'ffn-uneven' folder, which was not written")
    case_onnx_encoder(case, exe, folder, folder / "onnx" / "model.onnx", texts, text_file, work, threshold,
                      "ffn-onnx", remote=True)


def case_llama_ffn(case, exe, work):
    """A LLaMA with uneven FFN widths (layer 1 emptied): trust_remote_code=True loads it and
    decodes 40 greedy tokens as headprune does."""
    converted = work / "stories"
    if not (converted / "config.json").is_file():
        raise CheckFailed("needs the converted 'stories' folder, which was not written")
    width = headprune_inspect(exe, converted)["intermediate_size"]
    pruned = work / "stories-ffn"
    remove = {"0": list(range(0, width, 2)), "1": list(range(width)), "3": list(range(width // 4))}
    run_headprune(["apply", converted, "--remove-ffn", json.dumps(remove), "--out", pruned], exe,
                  "headprune apply --remove-ffn")
    count, text = check_greedy(exe, pruned, greedy_ids(remote_llama(pruned), 40), 40, "remote code")
    case.notes.append(f"remote code: {count} greedy tokens identical; text: {text.strip()[:40]!r}")


def case_dense_module(case, exe, model_dir, texts, text_file, work, threshold):
    """sentence-transformers builds all-MiniLM-L6-v2 + Pooling(mean and max) + Dense(768->4,
    tanh) + Normalize and saves it; headprune embed on that folder, and on an uneven prune of
    it, must match SentenceTransformer.encode (the Dense weights travel through the export)."""
    from sentence_transformers import models as st_models
    folder, pruned = work / "st-dense", work / "st-dense-pruned"
    base = SentenceTransformer(str(model_dir), device="cpu")
    torch.manual_seed(3)
    pooling = st_models.Pooling(384, pooling_mode_mean_tokens=True, pooling_mode_max_tokens=True)
    dense = st_models.Dense(768, 4, bias=True, activation_function=torch.nn.Tanh())
    st = SentenceTransformer(modules=[base[0], pooling, dense, st_models.Normalize()], device="cpu")
    st.save(str(folder), safe_serialization=True)
    for source, tag in ((folder, "st-dense"), (pruned, "st-dense-pruned")):
        if source is pruned:
            headprune_apply(exe, folder, UNEVEN, pruned)
        ours = headprune_embed(exe, source, text_file, work, tag)
        _, ref = st_embed(source, texts)
        check_cosines(case, cosines(ours, ref), texts, threshold, ours, ref)
    case.notes.append("mean+max pooling, Dense 768->4 tanh, Normalize")


def case_repruned(case, exe, texts, text_file, work, threshold):
    source = work / "uneven"
    if not (source / "config.json").is_file():
        raise CheckFailed("needs the 'uneven' folder, which was not written")
    folder = work / "repruned"
    headprune_apply(exe, source, REPRUNE, folder)
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    expected = {k: set(v) for k, v in UNEVEN.items()}
    for k, v in REPRUNE.items():
        expected.setdefault(k, set()).update(v)
    got = {str(k): set(v) for k, v in (cfg.get("pruned_heads") or {}).items()}
    if got != expected:
        raise CheckFailed("config.json pruned_heads does not accumulate original indices: got "
                          f"{ {k: sorted(v) for k, v in sorted(got.items())} }, expected "
                          f"{ {k: sorted(v) for k, v in sorted(expected.items())} }")
    case.notes.append("pruned_heads accumulated")
    check_loadable_and_matching(case, folder, exe, texts, text_file, work, threshold, "repruned")


def case_layers(case, exe, model_dir, texts, text_file, work, threshold):
    """sweep --baselines layers exports a shallower model: transformers' own BertModel (no remote
    code) loads it cleanly with num_hidden_layers 3, and sentence-transformers' embeddings of it
    match headprune embed."""
    sweep = work / "layers-sweep"
    run_headprune(["sweep", model_dir, "--data", REPO / "README.md", "--targets", "0.5", "--steps", "1",
                   "--batch-size", "8", "--max-length", "64", "--no-bench", "--baselines", "layers",
                   "--out", sweep], exe, "headprune sweep --baselines layers")
    folder = sweep / "layers-50"
    with captured_transformers_log() as (stream, _):
        model, info = AutoModel.from_pretrained(str(folder), output_loading_info=True, trust_remote_code=False)
    problems = {k: v for k, v in info.items() if v}
    if problems or "newly initialized" in stream.getvalue():
        raise CheckFailed(f"BertModel loading info not clean: {problems}\n{stream.getvalue()}")
    # Which class loads it depends on the transformers version's auto_map handling (BertModel, or
    # headprune's own when the folder's auto_map is honoured); both must give 3 full layers.
    if type(model).__name__ not in ("BertModel", "HeadpruneBertModel") or len(model.encoder.layer) != 3 \
            or hf_heads(model) != [12] * 3:
        raise CheckFailed(f"transformers built {type(model).__name__} with {len(model.encoder.layer)} layers, "
                          f"heads {hf_heads(model)}")
    if hf_params(model) != headprune_inspect(exe, folder)["parameters"]:
        raise CheckFailed("parameters: transformers and headprune inspect differ")
    removed = json.loads((folder / "config.json").read_text(encoding="utf-8"))["headprune"]["record"]
    case.notes.append(f"layers {removed['layers_removed']} removed; {type(model).__name__}, 3 layers, "
                      f"{hf_params(model)} params")
    ours = headprune_embed(exe, folder, text_file, work, "layers")
    st = SentenceTransformer(str(folder), device="cpu", trust_remote_code=False)
    ref = np.asarray(st.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False), dtype=np.float64)
    check_cosines(case, cosines(ours, ref), texts, threshold, ours, ref)


def case_zero_head(case, exe, model_dir, texts, text_file, work, threshold):
    """Required: apply warns, embed works, and the pinned transformers loads it and matches."""
    folder = work / "zero-head"
    proc = headprune_apply(exe, model_dir, {str(ZERO_LAYER): list(range(12))}, folder)
    warn_lines = [ln for ln in proc.stderr.splitlines() if "transformers" in ln]
    if not warn_lines:
        raise CheckFailed("headprune apply wrote a zero-head layer without a warning that "
                          f"mentions transformers on stderr; stderr was:\n{proc.stderr.strip()}")
    case.notes.append(f"apply warned: {warn_lines[0].strip()}")
    insp = headprune_inspect(exe, folder)
    if insp["heads_per_layer"][ZERO_LAYER] != 0:
        raise CheckFailed(f"inspect reports {insp['heads_per_layer']} heads per layer")
    ours = headprune_embed(exe, folder, text_file, work, "zero-head")
    norms = np.linalg.norm(ours, axis=1)
    if not np.all(np.isfinite(ours)) or np.abs(norms - 1).max() > 1e-4:
        raise CheckFailed("headprune embed on the zero-head folder gave non-finite or "
                          "non-unit embeddings")
    case.notes.append("headprune embed works")

    # The pinned transformers 4.46.3 + torch 2.5.1 load an empty layer (its Q/K/V are [0, 384],
    # its output projection [384, 0] plus the bias) and must match headprune. Older
    # combinations failed on it (transformers issue 17475), which is what apply's warning says.
    model, info, log, pywarn = hf_load(folder)
    problems = {k: info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                         "error_msgs") if info.get(k)}
    heads = hf_heads(model)
    del model
    if problems:
        raise CheckFailed(f"transformers loads the zero-head folder with problems {problems}")
    if heads != insp["heads_per_layer"]:
        raise CheckFailed(f"transformers loads the zero-head folder with heads {heads}, "
                          f"not {insp['heads_per_layer']}")
    _, ref = st_embed(folder, texts)
    cos = cosines(ours, ref)
    case.min_cos = float(cos.min())
    case.max_diff = float(np.abs(ours - ref).max())
    if not (np.all(np.isfinite(cos)) and cos.min() >= threshold):
        raise CheckFailed(f"sentence-transformers differs from headprune on the zero-head folder "
                          f"(min cosine {cos.min():.7f})")
    case.notes.append(f"transformers {transformers.__version__} + torch {torch.__version__} "
                      "load it and match")


# --------------------------------------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gates_of(folder):
    """log_alpha and keep of every head in a gates folder, in layer order."""
    layers = json.loads((folder / "gates.json").read_text())["layers"]
    return ([a for layer in layers for a in layer["log_alpha"]],
            [k for layer in layers for k in layer["keep"]])


def case_torchrun(case, exe, model_dir, text_file, work):
    args = ["train-gates", model_dir, "--data", text_file, "--target-sparsity", "0.5", "--steps", "5",
            "--batch-size", "8", "--threads", "1", "--force"]
    run_headprune([*args, "-o", work / "gates-one"], exe, "train-gates (1 process)")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--no-python", "--nnodes", "1",
           "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
           str(exe), *[str(a) for a in args], "-o", str(work / "gates-torchrun"), "--distributed",
           "--dist-timeout", "120"]
    print(f"  $ {' '.join(cmd)}", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace",
                          timeout=900)
    if proc.returncode != 0:
        raise CheckFailed(f"torchrun failed (exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    one, one_keep = gates_of(work / "gates-one")
    two, two_keep = gates_of(work / "gates-torchrun")
    case.max_diff = max(abs(a - b) for a, b in zip(one, two))
    if one_keep != two_keep:
        raise CheckFailed(f"the masks differ: {one_keep} vs {two_keep}")
    if case.max_diff > 1e-5:
        raise CheckFailed(f"log_alpha differs by {case.max_diff:.2e} (limit 1e-5)")


def load_texts(path):
    cases = json.loads(Path(path).read_text(encoding="utf-8"))["cases"]
    texts = [c["text"].replace("\r", " ").replace("\n", " ") for c in cases]
    changed = sum(1 for c in cases if "\r" in c["text"] or "\n" in c["text"])
    return texts, changed


def print_table(cases):
    name_w = max(len("case"), *(len(c.name) for c in cases))
    res_w = max(len("result"), *(len(c.result) for c in cases))
    print()
    print(f"{'case':<{name_w}}  {'min cosine':>11}  {'max |diff|':>10}  {'seconds':>7}  {'result':<{res_w}}  notes")
    print(f"{'-' * name_w}  {'-' * 11}  {'-' * 10}  {'-' * 7}  {'-' * res_w}  {'-' * 5}")
    for c in cases:
        mc = "-" if c.min_cos is None else f"{c.min_cos:.8f}"
        md = "-" if c.max_diff is None else f"{c.max_diff:.2e}"
        lines = [line for n in (c.notes or [""]) for line in n.splitlines()] or [""]
        print(f"{c.name:<{name_w}}  {mc:>11}  {md:>10}  {c.seconds:>7.1f}  {c.result:<{res_w}}  {lines[0]}")
        pad = f"{'':<{name_w}}  {'':>11}  {'':>10}  {'':>7}  {'':<{res_w}}  "
        for line in lines[1:]:
            print(pad + line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--headprune", default=str(DEFAULT_HEADPRUNE), help="headprune executable")
    ap.add_argument("--model", default=str(DEFAULT_MODEL), help="all-MiniLM-L6-v2 folder")
    ap.add_argument("--texts", default=str(DEFAULT_TEXTS),
                    help="JSON with cases[i].text (default tests/fixtures/minilm/tokens.json)")
    ap.add_argument("--work", help="scratch folder (kept); default: a fresh temporary folder "
                                   "that is removed at the end")
    ap.add_argument("--keep", action="store_true", help="keep the default temporary folder")
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    shared = os.environ.get("HEADPRUNE_SHARED_DATA") or str(REPO.parent / "shared" / "data")
    ap.add_argument("--stories", default=str(Path(shared) / "stories260K"),
                    help="folder with stories260K.bin and tok512.bin")
    ap.add_argument("--smollm2", default=str(REPO / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"),
                    help="SmolLM2-135M-Instruct GGUF file (scripts/fetch-model SmolLM2-135M-Instruct)")
    ap.add_argument("--mpnet", help="all-mpnet-base-v2 folder (scripts/fetch-model all-mpnet-base-v2): adds the "
                                    "real model's dense and uneven-prune case (not run without it)")
    ap.add_argument("--only", help="run only the cases whose name contains one of these comma-separated texts "
                                   "(e.g. 'mistral,phi3'; a case may need a folder an earlier case writes)")
    args = ap.parse_args()

    exe = Path(args.headprune).resolve()
    model_dir = Path(args.model).resolve()
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        ap.error(f"--headprune {exe} is not an executable file")
    if not (model_dir / "config.json").is_file():
        ap.error(f"--model {model_dir} has no config.json (run scripts/fetch-model)")
    help_text = subprocess.run([str(exe), "--help"], capture_output=True, text=True).stdout
    for cmd in ("apply", "embed", "inspect", "eval", "generate", "convert-llama2c", "convert-gguf", "export-onnx"):
        if f"  {cmd} " not in help_text:
            print(f"check_interop: {exe} has no '{cmd}' command (stale build?)", file=sys.stderr)
            return 1

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    texts, changed = load_texts(args.texts)
    own_work = args.work is None
    work = Path(tempfile.mkdtemp(prefix="headprune-interop-")) if own_work else Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for sub in ("uneven", "repruned", "zero-head", "classifier", "classifier-pruned", "stories",
                "stories-uniform", "stories-6-heads", "stories-uneven", "stories-uneven-empty", "st-dense", "st-dense-pruned",
                "onnx-uneven", "layers-sweep", "smollm2", "distilbert-uneven", "mpnet-uneven", "roberta-uneven",
                "xlm_roberta-uneven", "modernbert-uneven", *(f"{n}-classifier-uneven" for n in ("distilbert", "mpnet", "roberta", "xlm_roberta", "modernbert")),
                "all-mpnet-uneven",
                *(f"{f}-{k}" for f in DECODER_CLASSES for k in ("uniform", "uneven"))):  # apply and sweep refuse a non-empty --out
        shutil.rmtree(work / sub, ignore_errors=True)
    text_file = work / "texts.txt"
    with open(text_file, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(t + "\n" for t in texts))

    print(f"check_interop: headprune {exe}\n  model {model_dir}\n  {len(texts)} texts from "
          f"{args.texts} ({changed} with CR/LF replaced by spaces)\n  transformers "
          f"{transformers.__version__}, sentence-transformers {sentence_transformers.__version__}, "
          f"torch {torch.__version__}\n  work {work}", flush=True)
    start = time.monotonic()
    results = []
    thr = args.min_cosine
    steps = [
        (Case("dense (baseline)"), lambda c: case_dense(c, exe, model_dir, texts, text_file, work, thr)),
        (Case("uneven prune"), lambda c: case_uneven(c, exe, model_dir, texts, text_file, work, thr)),
        (Case("FFN uneven"), lambda c: case_ffn_uneven(c, exe, model_dir, texts, text_file, work, thr)),
        (Case("re-prune of pruned"), lambda c: case_repruned(c, exe, texts, text_file, work, thr)),
        (Case(f"zero-head layer {ZERO_LAYER}"),
         lambda c: case_zero_head(c, exe, model_dir, texts, text_file, work, thr)),
        (Case("layers dropped (sweep baseline)"),
         lambda c: case_layers(c, exe, model_dir, texts, text_file, work, thr)),
        (Case("classifier head"), lambda c: case_classifier(c, exe, model_dir, work)),
        (Case("st Dense + mean/max pooling"),
         lambda c: case_dense_module(c, exe, model_dir, texts, text_file, work, thr)),
        (Case("llama-gqa uniform"), lambda c: case_llama(c, exe, Path(args.stories).resolve(), work)),
        (Case("llama 6 of 8 heads"), lambda c: case_llama_indivisible(c, exe, Path(args.stories).resolve(), work)),
        (Case("llama uneven, empty layer"), lambda c: case_llama_uneven(c, exe, work)),
        (Case("llama FFN uneven, empty FFN"), lambda c: case_llama_ffn(c, exe, work)),
        *((Case(f"{f} dense, uniform, uneven"), lambda c, f=f: case_decoder_family(c, exe, work, f))
          for f in ("qwen2", "mistral", "phi3", "llama3")),
        (Case("distilbert uneven"), lambda c: case_distilbert(c, exe, work)),
        (Case("mpnet dense, uneven"), lambda c: case_mpnet_fixture(c, exe, work)),
        *((Case(f"{n} dense, uneven"), lambda c, n=n: case_roberta(c, exe, work, n)) for n in ("roberta", "xlm_roberta")),
        (Case("modernbert dense, uneven"), lambda c: case_modernbert(c, exe, work)),
        *((Case(f"{n} classifier uneven"), lambda c, n=n: case_encoder_classifier(c, exe, work, n))
          for n in ("distilbert", "mpnet", "roberta", "xlm_roberta", "modernbert")),
        *([(Case("all-mpnet-base-v2 dense, uneven"),
            lambda c: case_mpnet(c, exe, Path(args.mpnet).resolve(), texts, text_file, work, "all-mpnet", MPNET_UNEVEN))]
          if args.mpnet else []),
        (Case("smollm2 gguf -> HF folder"), lambda c: case_smollm2(c, exe, Path(args.smollm2).resolve(), work)),
        (Case("torchrun, 2 ranks = 1 process"), lambda c: case_torchrun(c, exe, model_dir, text_file, work)),
    ]
    if REMOTE:  # transformers 4.46.3 has no Qwen3 (4.51) and no Gemma 3 (4.50)
        steps += [(Case(f"{f} dense, uniform, uneven"), lambda c, f=f: case_decoder_family(c, exe, work, f))
                  for f in ("qwen3", "gemma3")]
    if HAVE_ORT:
        steps += [
            (Case("onnx minilm uneven, zero-head"),
             lambda c: case_onnx_minilm(c, exe, model_dir, texts, text_file, work, thr)),
            (Case("onnx classifier"), lambda c: case_onnx_classifier(c, exe, work)),
            (Case("onnx FFN uneven"), lambda c: case_onnx_ffn(c, exe, texts, text_file, work, thr)),
            *((Case(f"onnx {n} uneven"), lambda c, n=n: case_onnx_fixture(c, exe, work, n))
              for n in ("distilbert", "mpnet", "roberta", "xlm_roberta", "modernbert")),
            (Case("onnx llama uniform, uneven"), lambda c: case_onnx_llama(c, exe, work)),
            *((Case(f"onnx {f} uneven"), lambda c, f=f: case_onnx_decoder(c, exe, work, f)) for f in DECODER_CLASSES),
        ]
    try:
        if args.only:
            wanted = [w for w in args.only.split(",") if w]
            steps = [(case, step) for case, step in steps if any(w in case.name for w in wanted)]
        for case, step in steps:
            print(f"\n[{case.name}]", flush=True)
            case_start = time.monotonic()
            try:
                step(case)
            except CheckFailed as e:
                case.fail(str(e))
            except Exception as e:  # noqa: BLE001 - report, then go on with the next case
                case.fail(f"{type(e).__name__}: {e}")
                traceback.print_exc()
            case.seconds = time.monotonic() - case_start
            results.append(case)
            print(f"  -> {case.result} ({case.seconds:.1f} s)" + (f" (min cosine {case.min_cos:.8f})" if case.min_cos is not None else ""),
                  flush=True)
    finally:
        if own_work and not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print_table(results)
    failed = [c for c in results if c.required and c.result == "FAIL"]
    print(f"\n{len(results) - len(failed)}/{len(results)} cases passed in "
          f"{time.monotonic() - start:.1f} s (threshold cosine >= {args.min_cosine})")
    if failed:
        for c in failed:
            print(f"FAILED {c.name}: {c.notes[-1]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
