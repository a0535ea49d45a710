#!/usr/bin/env bash
# Calibration-text study (issue 17, item 6): how much does the text the gates are trained on
# change the pruned model's quality on a task it never saw?
#
# For each corpus and seed: `headprune prune MODEL --data TEXT --target-sparsity 0.5` (gates only,
# 300 steps, no benchmark), then the export's quality on held-out data it never saw. Prints one
# tab-separated row per run and appends it to $OUT/results.tsv (a rerun skips rows already
# there, so the study can be resumed). Two studies:
#   STUDY=encoder (default): all-MiniLM-L6-v2, defaults otherwise; quality = STS-B dev Spearman.
#   STUDY=decoder: the stories260K LLaMA (GQA 8/4; converted into $OUT/stories260K), with
#     --gqa-mode uniform --batch-size 16 --max-length 128; quality = KL(dense || pruned) and
#     the pruned model's perplexity on 200 stories the dense model sampled with seed 2
#     (`generate --temperature 1`), i.e. the text its users generate.
#
#   tools/calibration_study.sh [SEED...]      (default seeds: 42 1 2)
#
# The quality study (issue 38) runs the same grid over methods and targets on one text: TARGETS
# (default 0.5, space-separated fractions of heads removed) and METHODS (default `default`,
# space-separated; a method is `default` or names joined by `+`: distill1 = --distill-layers 1,
# distill3 = --distill-layers 3, train-weights, refit-scale = --refit scale, refit-output,
# rearrange, or OPTION=VALUE for any prune option: finetune-steps=400), e.g.
#   CORPORA=wordnet-examples TARGETS="0.25 0.5 0.75" METHODS="default distill1 train-weights" \
#     OUT=out/quality-study tools/calibration_study.sh 1 2 3
# Rows are keyed by corpus, target, method and seed.
#
# Environment: STUDY, TARGETS, METHODS, HEADPRUNE (default build/headprune), MODEL (default
# .cache/models/all-MiniLM-L6-v2 or the converted stories260K), HEADPRUNE_SHARED_DATA (default
# ../shared/data: WikiText-2, tiny-shakespeare, UD EWT, STS-B dev, stories260K), OUT (default
# out/calibration-study or out/calibration-study-decoder), CORPORA (default: the encoder's
# seven names below, or the decoder's six, space-separated).
#
# Corpora: fortunes (Debian `fortunes`, cookie + people, paragraphs); wikitext (WikiText-2 raw
# test); shakespeare (tiny-shakespeare, paragraphs = speeches); ud-ewt (the `# text` sentences of
# UD English EWT dev: web reviews, e-mail, blogs, answers); lee-news (the Lee et al. news corpus
# `lee_background.cor` in the PyPI wheel of gensim 4.4.0: 299 ABC news articles); debian-reference
# (Debian `debian-reference-en`, the plain-text manual, paragraphs); wordnet-examples (the quoted
# usage examples of Debian `wordnet-base`, one per line, in the order scripts/setup writes
# them — the order decides each seed's shuffle). Two texts that are not sentences, to set
# prune's warnings: wordnet-lemmas (the noun lemmas of `wordnet-base`'s index, one per line) and
# c-headers (the C headers in /usr/include, paragraphs). wordnet-* need `wordnet-base` installed
# (scripts/setup does), except wordnet-examples, which downloads it. For the decoder also
# own-samples: 600 stories the dense model samples itself with seed 1 (the label-free default
# for an LLM, as docs/results.md's stories260K runs use). Downloads go to $OUT/sources; nothing
# is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

study="${STUDY:-encoder}"
headprune="${HEADPRUNE:-build/headprune}"
shared="${HEADPRUNE_SHARED_DATA:-../shared/data}"
seeds=("$@"); ((${#seeds[@]})) || seeds=(42 1 2)
case "$study" in
  encoder)
    out="${OUT:-out/calibration-study}"
    model="${MODEL:-.cache/models/all-MiniLM-L6-v2}"
    corpora=(${CORPORA:-fortunes wikitext shakespeare ud-ewt lee-news debian-reference wordnet-examples})
    prune_args=()
    columns='sts_dev' ;;
  decoder)
    out="${OUT:-out/calibration-study-decoder}"
    model="${MODEL:-$out/stories260K}"
    corpora=(${CORPORA:-own-samples wordnet-examples ud-ewt wikitext fortunes shakespeare})
    prune_args=(--gqa-mode uniform --batch-size 16 --max-length 128)
    columns='kl_nats_per_token\theldout_perplexity\tdense_perplexity' ;;
  *) echo "calibration_study: STUDY must be encoder or decoder, not '$study'" >&2; exit 2 ;;
esac
read -r -a targets <<< "${TARGETS:-0.5}"
read -r -a methods <<< "${METHODS:-default}"
src="$out/sources"
mkdir -p "$src"
if [ "$study" = decoder ]; then
  [ -f "$model/config.json" ] || "$headprune" convert-llama2c "$shared/stories260K/stories260K.bin" \
    --tokenizer "$shared/stories260K/tok512.bin" -o "$model" >&2
  [ -s "$src/heldout-samples.txt" ] || "$headprune" --seed 2 generate "$model" --samples 200 --temperature 1 \
    --max-new-tokens 128 > "$src/heldout-samples.txt"
fi

# Prepares one corpus; prints the --data arguments for it.
prepare() {
  case "$1" in
    fortunes) echo "/usr/share/games/fortunes/cookie /usr/share/games/fortunes/people --paragraphs" ;;
    wikitext) echo "$shared/corpus/wikitext2_raw_test.raw" ;;
    shakespeare) echo "$shared/corpus/tinyshakespeare_input.txt --paragraphs" ;;
    ud-ewt)
      [ -s "$src/ud-ewt.txt" ] || sed -n 's/^# text = //p' "$shared/ud_english_ewt/en_ewt-ud-dev.conllu" > "$src/ud-ewt.txt"
      echo "$src/ud-ewt.txt" ;;
    lee-news)
      if [ ! -s "$src/lee_background.cor" ]; then
        python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$src" gensim==4.4.0 >&2
        unzip -q -o -j "$src"/gensim-4.4.0-*.whl gensim/test/test_data/lee_background.cor -d "$src"
      fi
      echo "$src/lee_background.cor" ;;
    debian-reference)
      if [ ! -s "$src/debian-reference.en.txt" ]; then
        (cd "$src" && apt-get download debian-reference-en >&2 2>/dev/null)
        dpkg-deb --fsys-tarfile "$src"/debian-reference-en_*.deb |
          tar -xO ./usr/share/debian-reference/debian-reference.en.txt.gz | zcat > "$src/debian-reference.en.txt"
      fi
      echo "$src/debian-reference.en.txt --paragraphs" ;;
    wordnet-examples)
      if [ ! -s "$src/wordnet-examples.txt" ]; then
        (cd "$src" && apt-get download wordnet-base >&2 2>/dev/null)
        dpkg-deb --fsys-tarfile "$src"/wordnet-base_*.deb |
          tar -xO ./usr/share/wordnet/data.adj ./usr/share/wordnet/data.adv \
                  ./usr/share/wordnet/data.noun ./usr/share/wordnet/data.verb |
          grep -v '^  ' | grep -o '"[^"]*"' | tr -d '"' > "$src/wordnet-examples.txt"
      fi
      echo "$src/wordnet-examples.txt" ;;
    wordnet-lemmas)  # not sentences: one word or phrase per line (the limits' short-documents case)
      [ -s "$src/wordnet-lemmas.txt" ] || grep -v '^  ' /usr/share/wordnet/index.noun | cut -d' ' -f1 |
        tr _ ' ' > "$src/wordnet-lemmas.txt"
      echo "$src/wordnet-lemmas.txt" ;;
    c-headers)  # not prose: C declarations (the limits' code case)
      [ -s "$src/c-headers.txt" ] || cat /usr/include/*.h > "$src/c-headers.txt"
      echo "$src/c-headers.txt --paragraphs" ;;
    own-samples)
      [ -s "$src/own-samples.txt" ] || "$headprune" --seed 1 generate "$model" --samples 600 --temperature 1 \
        --max-new-tokens 128 > "$src/own-samples.txt"
      echo "$src/own-samples.txt" ;;
    *) echo "calibration_study: unknown corpus '$1'" >&2; exit 2 ;;
  esac
}

# Prints the prune arguments of one method (names joined by '+', or 'default').
method_args() {
  local name
  for name in ${1//+/ }; do
    case "$name" in
      default) ;;
      distill1) echo "--distill-layers 1" ;;
      distill3) echo "--distill-layers 3" ;;
      train-weights) echo "--train-weights" ;;
      refit-scale) echo "--refit scale" ;;
      refit-output) echo "--refit output" ;;
      rearrange) echo "--rearrange" ;;
      *=*) echo "--${name%%=*} ${name#*=}" ;;  # any prune option with a value: finetune-steps=400
      *) echo "calibration_study: unknown method '$name'" >&2; exit 2 ;;
    esac
  done
}

# The export's quality, tab-separated in the order of $columns.
quality() {
  if [ "$study" = encoder ]; then
    "$headprune" eval "$1" --sts "$shared/stsb/sts-dev.csv" --json |
      python3 -c 'import json,sys; print(round(json.load(sys.stdin)["sts"]["spearman"], 2))'
  else
    "$headprune" eval "$1" --teacher "$model" --data "$src/heldout-samples.txt" --json |
      python3 -c 'import json,sys; f=json.load(sys.stdin)["fidelity"]
print(round(f["kl"], 4), round(f["student_perplexity"], 3), round(f["teacher_perplexity"], 3), sep="\t")'
  fi
}

for method in "${methods[@]}"; do method_args "$method" > /dev/null; done  # an unknown name stops here, not hours in
results="$out/results.tsv"
header="corpus\ttarget\tmethod\tseed\t$columns\theads_kept\theldout_cosine\tgate_steps\tseconds"
# shellcheck disable=SC2059
[ -f "$results" ] || printf "$header\n" > "$results"
# shellcheck disable=SC2059
if [ "$(head -n 1 "$results")" != "$(printf "$header")" ]; then
  echo "calibration_study: $results has other columns (an older study's); give another OUT" >&2
  exit 2
fi
for seed in "${seeds[@]}"; do
  for corpus in "${corpora[@]}"; do
    for target in "${targets[@]}"; do
      for method in "${methods[@]}"; do
        grep -q "^$corpus	$target	$method	$seed	" "$results" && continue
        data=$(prepare "$corpus")
        args=$(method_args "$method")
        run="$out/$corpus-t$target-$method-s$seed"
        start=$(date +%s)
        # shellcheck disable=SC2086
        "$headprune" prune "$model" --data $data --target-sparsity "$target" --no-bench --seed "$seed" \
          "${prune_args[@]}" $args --out "$run" --force > "$run.log" 2>&1
        seconds=$(( $(date +%s) - start ))
        scores=$(quality "$run")
        read -r heads cosine steps < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))
g=json.load(open(sys.argv[2]))["summary"]
print(s["heads_kept"], round(s["fidelity"].get("mean_cosine", float("nan")), 4), g["gate_steps"])' \
          "$run/headprune/summary.json" "$run/headprune/gates.json")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$corpus" "$target" "$method" "$seed" "$scores" "$heads" \
          "$cosine" "$steps" "$seconds" | tee -a "$results"
      done
    done
  done
done
