#!/usr/bin/env bash
# GPU check of headprune on a machine without network and without the Debian -dev packages:
# builds against the machine's own PyPI torch (python3) with its CUDA libraries, taking Boost,
# nlohmann-json, Catch2, utf8proc, PCRE2, libcsv, ONNX, protobuf and Gloo from .gpu-sysroot/
# (Debian 12's files, MANIFEST.txt), then runs on cuda: the [llama] tests (stories260K from
# .gpu-sysroot/data), the [gguf] tests (committed fixtures), a stories260K prune and a bench.
#
#   OUT=/some/folder bash .gpu-sysroot/device-check.sh      # from the repository root
#
# Environment: OUT (default out/device-check), BUDGET_S (whole-script deadline, default 560),
# JOBS (default 16), CXX (default g++, else c++ / clang++), HP_CLEAN=1 (rebuild build-gpu from
# scratch; by default an existing build-gpu is reused).
# Every step is timed and guarded: a failure or a timeout does not stop the later steps; each
# step's timeout is cut to what is left of BUDGET_S, so the results are always copied to $OUT.
set -uo pipefail
T0=$(date +%s)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$PWD
OUT="${OUT:-$ROOT/out/device-check}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
exec > >(tee "$OUT/log.txt") 2>&1
TEE_PID=$!
BUDGET_S="${BUDGET_S:-580}"
JOBS="${JOBS:-16}"
BUILD="${HP_BUILD_DIR:-$ROOT/build-gpu}"
WORK="$(mktemp -d /tmp/hp-device.XXXXXX)"
DATA="$ROOT/.gpu-sysroot/data"
SUMMARY=()
DEV="${HP_DEVICE:-cuda}"  # cpu only for trying the script out elsewhere

now() { date +%s; }
left() { echo $((BUDGET_S - ($(now) - T0))); }

# step NAME TIMEOUT_S COMMAND...  -- runs COMMAND under `timeout`, prints and records rc + seconds.
step() {
  local name="$1" limit="$2"; shift 2
  local remaining; remaining=$(left)
  if ((remaining - 15 < limit)); then limit=$((remaining - 15)); fi
  if ((limit < 10)); then
    echo "=== [$name] SKIPPED: only ${remaining}s of the ${BUDGET_S}s budget left"
    SUMMARY+=("$(printf '%-22s %-10s %6s' "$name" skipped -)")
    return 99
  fi
  echo
  echo "=== [$name] (timeout ${limit}s) $(date -u +%H:%M:%S) ==="
  local t; t=$(now)
  timeout -k 10 "$limit" "$@"
  local rc=$?
  local dt=$(($(now) - t))
  local status=ok
  ((rc == 124 || rc == 137)) && status=TIMEOUT
  ((rc != 0 && rc != 124 && rc != 137)) && status="rc=$rc"
  echo "=== [$name] $status in ${dt}s ==="
  SUMMARY+=("$(printf '%-22s %-10s %6s' "$name" "$status" "${dt}s")")
  return $rc
}

finish() {
  echo
  echo "=== summary (total $(($(now) - T0))s of ${BUDGET_S}s) ==="
  printf '%-22s %-10s %6s\n' step status time
  printf '%s\n' "${SUMMARY[@]}"
  {
    printf '%-22s %-10s %6s\n' step status time
    printf '%s\n' "${SUMMARY[@]}"
    echo "total $(($(now) - T0))s"
  } > "$OUT/summary.txt"
  # At most 8 small files in $OUT: log.txt, summary.txt and these.
  [ -f "$BUILD/CMakeCache.txt" ] && echo "--- dependencies as configured ---" && grep -E '^(CMAKE_CXX_COMPILER|CMAKE_GENERATOR|HEADPRUNE_[A-Z_]+|Boost_DIR|Boost_INCLUDE_DIR|Boost_PROGRAM_OPTIONS_LIBRARY_RELEASE|fmt_DIR|nlohmann_json_DIR|Catch2_DIR|ONNX_DIR|Protobuf_INCLUDE_DIR|Protobuf_LIBRARY_RELEASE|LIBCSV_[A-Z_]+|GLOO_INCLUDE_DIR|PKG_CONFIG_EXECUTABLE|pkgcfg_lib_[A-Za-z0-9_-]+|(UTF8PROC|PCRE2)_(INCLUDE_DIRS|LIBRARY_DIRS|VERSION))[:=]' \
      "$BUILD/CMakeCache.txt"
  local q="$WORK/llama32-1b-25/headprune"
  [ -f "$q/summary.json" ] && cp "$q/summary.json" "$OUT/prune-1b-summary.json"
  [ -f "$q/report.txt" ] && cp "$q/report.txt" "$OUT/prune-1b-report.txt"
  local p="$WORK/stories-50/headprune"
  [ -f "$p/summary.json" ] && cp "$p/summary.json" "$OUT/prune-summary.json"
  [ -f "$p/report.txt" ] && cp "$p/report.txt" "$OUT/prune-report.txt"
  [ -f "$WORK/bench.json" ] && cp "$WORK/bench.json" "$OUT/bench.json"
  [ -f "$WORK/bench-bf16.json" ] && cp "$WORK/bench-bf16.json" "$OUT/bench-bf16.json"
  find "$OUT" -type f -size +15M -print -delete
  echo "files in \$OUT:"; ls -la "$OUT"
  rm -rf "$WORK"
  exec 1>&- 2>&-
  wait "$TEE_PID" 2>/dev/null
}
trap finish EXIT

echo "=== machine ==="
date -u
uname -a
(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
ldd --version 2>&1 | head -1
echo "cores: $(nproc)"; free -g | head -2; df -h "$ROOT" /tmp | tail -n +1
nvidia-smi -L || echo "nvidia-smi failed"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>/dev/null
python3 -c 'import torch;print(torch.__version__, torch.cuda.is_available())' || echo "python3 torch failed"
if [ -z "${CXX:-}" ]; then
  for c in g++ c++ clang++; do command -v "$c" >/dev/null 2>&1 && { CXX="$(command -v "$c")"; break; }; done
fi
CXX="${CXX:-}"
[ -n "$CXX" ] && "$CXX" --version | head -1 || echo "NO C++ COMPILER FOUND"
cmake --version | head -1 || echo "NO CMAKE"
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); echo "ninja $(ninja --version)"; else GEN=(-G "Unix Makefiles"); echo "no ninja: make"; fi
command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -1
[ -x /usr/bin/time ] && TIMEV=(/usr/bin/time -v) || { TIMEV=(); echo "no /usr/bin/time"; }

WHEEL="$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)"
echo "torch wheel: ${WHEEL:-NOT FOUND}"

echo "=== sysroot ==="
export HP_SYSROOT="$ROOT/.gpu-sysroot"
# shellcheck source=/dev/null
source "$HP_SYSROOT/sysroot-env.sh"
echo "pkg-config used: ${HP_PKG_CONFIG:-NONE (configure will fail at find_package(PkgConfig))}"
[ -n "$HP_PKG_CONFIG" ] && "$HP_PKG_CONFIG" --cflags --libs libutf8proc libpcre2-8
EXTRA_FLAGS=""
if [ -n "$WHEEL" ]; then
  grep -h 'define GOOGLE_PROTOBUF_VERSION ' "$WHEEL/include/google/protobuf/stubs/common.h" 2>/dev/null \
    | sed 's/^/wheel protobuf headers (shadowed by the sysroot 3021012 ones): /'
  if [ ! -f "$WHEEL/include/fmt/format.h" ]; then
    echo "the wheel ships no fmt headers: using Debian's fmt 9 (.gpu-sysroot/fmt-fallback) + libfmt.so.9"
    EXTRA_FLAGS="-isystem $HP_SYSROOT/fmt-fallback/include"
  fi
fi

built=0
if [ -n "$CXX" ] && [ -n "$WHEEL" ]; then
  [ -n "${HP_CLEAN:-}" ] && rm -rf "$BUILD"  # else an earlier build-gpu (warm machine) is reused
  if step configure 120 cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_CXX_FLAGS="$EXTRA_FLAGS" \
      -DHEADPRUNE_TORCH_WHEEL="$WHEEL" -DHEADPRUNE_TORCH_CUDA=ON \
      -DHEADPRUNE_BUILD_TESTS=ON -DHEADPRUNE_UNITY_BUILD=ON -DHEADPRUNE_WERROR=OFF \
      "${HP_SYSROOT_CMAKE_ARGS[@]}"; then
    if [ -z "${HP_SKIP_BUILD:-}" ]; then
      step build 430 cmake --build "$BUILD" -j "$JOBS"
    fi
  fi
fi
# local testing only: HP_TEST_BUILD=<an existing build folder> runs the steps below with it
[ -n "${HP_TEST_BUILD:-}" ] && BUILD="$HP_TEST_BUILD"
# the binaries may exist even when discovering the tests (POST_BUILD) failed
[ -x "$BUILD/headprune" ] && [ -x "$BUILD/headprune_tests" ] && built=1
if ((built)); then
  echo "--- ldd build-gpu/headprune (sysroot, torch, missing) ---"
  ldd "$BUILD/headprune" | grep -E 'not found|gpu-sysroot|torch|cuda|protobuf|onnx' | sed 's/ (0x.*//'
fi

HP="$BUILD/headprune"
TESTS="$BUILD/headprune_tests"
export HEADPRUNE_SHARED_DATA="$DATA"
if ((built)); then
  # (a) the LLaMA tests on cuda (stories260K; "logits match HF transformers" uses the committed
  # reference logits with test_device())
  HEADPRUNE_TEST_DEVICE="$DEV" step 'tests [llama] cuda' 90 "$TESTS" "[llama]" -d yes

  # (1B) issue 37: a Llama-3.2-1B-shaped model (bf16 safetensors, llama3 RoPE, vocab 128,256) made
  # by transformers on the GPU with its reference logits; headprune's logits on cuda against
  # them; a prune of 25% of the query heads in whole KV groups, uniform over layers (a plain
  # LlamaForCausalLM config), its export's logits against transformers' on that export.
  L1B="$WORK/llama32-1b"
  step 'make 1B-shaped' 120 python3 "$ROOT/tools/make_llama32_1b_shaped.py" "$L1B" --device "$DEV" --reference
  HEADPRUNE_LLAMA32_1B="$L1B" HEADPRUNE_TEST_DEVICE="$DEV" step '1B logits vs HF' 90 "$TESTS" "[llama32-1b]" -s
  step 'prune 1B cuda' 200 ${TIMEV[@]+"${TIMEV[@]}"} "$HP" --device "$DEV" prune "$L1B" \
    --data "$DATA/corpus/wikitext2_raw_test.raw" --target-sparsity 0.25 --gqa-mode groups --uniform-layers \
    --steps 40 --batch-size 4 --max-length 512 --max-lines 4000 --bench-batch-size 1,32 --bench-seq-len 128 \
    --out "$WORK/llama32-1b-25" --force
  step 'reference of 1B export' 90 python3 "$ROOT/tools/make_llama32_1b_shaped.py" \
    --reference-of "$WORK/llama32-1b-25" --device "$DEV"
  HEADPRUNE_LLAMA32_1B="$WORK/llama32-1b-25" HEADPRUNE_TEST_DEVICE="$DEV" step '1B export vs HF' 90 \
    "$TESTS" "[llama32-1b]" -s
  rm -rf "$L1B"

  # (b) the other tests that honour HEADPRUNE_TEST_DEVICE on committed fixtures (tiny GGUF LLaMA)
  HEADPRUNE_TEST_DEVICE="$DEV" step 'tests [gguf] cuda' 60 "$TESTS" "[gguf]" -d yes

  # (c) stories260K: convert, sample a training text on cuda, prune to 50% of query heads on cuda
  D="$DATA/stories260K"
  step convert-llama2c 60 "$HP" convert-llama2c "$D/stories260K.bin" --tokenizer "$D/tok512.bin" \
    --out "$WORK/stories260K"
  step 'generate cuda' 90 bash -c '"$1" --device "$4" --seed 1 generate "$2" --samples 200 --temperature 1 \
      --max-new-tokens 64 > "$3"' _ "$HP" "$WORK/stories260K" "$WORK/samples.txt" "$DEV"
  TEXT="$WORK/samples.txt"
  lines=$(wc -l < "$TEXT" 2>/dev/null || echo 0)
  echo "sampled lines: $lines"; head -3 "$TEXT" 2>/dev/null
  if ((lines < 50)); then TEXT="$DATA/corpus/tinyshakespeare_input.txt"; echo "training text: $TEXT (fallback)"; fi
  step 'prune cuda' 240 ${TIMEV[@]+"${TIMEV[@]}"} "$HP" --device "$DEV" prune "$WORK/stories260K" --data "$TEXT" \
    --target-sparsity 0.5 --gqa-mode uniform --steps 300 --batch-size 16 --max-length 128 \
    --out "$WORK/stories-50" --force
  [ -f "$WORK/stories-50/headprune/report.txt" ] && cat "$WORK/stories-50/headprune/report.txt"
  step 'generate pruned cuda' 60 "$HP" --device "$DEV" generate "$WORK/stories-50" --temperature 0 --max-new-tokens 60

  # (d) dense vs pruned on cuda, float32 then bfloat16
  if [ -d "$WORK/stories-50" ]; then
    step 'bench cuda' 120 "$HP" --device "$DEV" bench "$WORK/stories260K" "$WORK/stories-50" \
      --max-seconds 5 --max-reps 20 --json-file "$WORK/bench.json"
    step 'bench cuda bf16' 90 "$HP" --device "$DEV" bench "$WORK/stories260K" "$WORK/stories-50" \
      --dtype bfloat16 --max-seconds 5 --max-reps 20 --json-file "$WORK/bench-bf16.json"
  fi
fi
exit 0
