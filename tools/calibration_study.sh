#!/usr/bin/env bash
# Calibration-text study (issue 17, item 6): how much does the text the gates are trained on
# change the pruned model's quality on a task it never saw?
#
# For each corpus and seed: `headprune prune MODEL --data TEXT --target-sparsity 0.5` (gates only,
# 300 steps, no benchmark), then STS-B dev Spearman of the export. Everything else is the
# default. Prints one tab-separated row per run and appends it to $OUT/results.tsv (a rerun
# skips rows already there, so the study can be resumed).
#
#   tools/calibration_study.sh [SEED...]      (default seeds: 42 1 2)
#
# Environment: HEADPRUNE (default build/headprune), MODEL (default
# .cache/models/all-MiniLM-L6-v2), HEADPRUNE_SHARED_DATA (default ../shared/data: WikiText-2,
# tiny-shakespeare, UD EWT, STS-B dev), OUT (default out/calibration-study), CORPORA (default:
# all names below, space-separated).
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
# (scripts/setup does), except wordnet-examples, which downloads it. Downloads go to $OUT/sources; nothing
# is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

headprune="${HEADPRUNE:-build/headprune}"
model="${MODEL:-.cache/models/all-MiniLM-L6-v2}"
shared="${HEADPRUNE_SHARED_DATA:-../shared/data}"
out="${OUT:-out/calibration-study}"
corpora=(${CORPORA:-fortunes wikitext shakespeare ud-ewt lee-news debian-reference wordnet-examples})
seeds=("$@"); ((${#seeds[@]})) || seeds=(42 1 2)
src="$out/sources"
mkdir -p "$src"

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
    *) echo "calibration_study: unknown corpus '$1'" >&2; exit 2 ;;
  esac
}

results="$out/results.tsv"
[ -f "$results" ] || printf 'corpus\tseed\tsts_dev\theads_kept\theldout_cosine\tseconds\n' > "$results"
for seed in "${seeds[@]}"; do
  for corpus in "${corpora[@]}"; do
    grep -q "^$corpus	$seed	" "$results" && continue
    data=$(prepare "$corpus")
    run="$out/$corpus-s$seed"
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$headprune" prune "$model" --data $data --target-sparsity 0.5 --no-bench --seed "$seed" \
      --out "$run" --force > "$run.log" 2>&1
    seconds=$(( $(date +%s) - start ))
    sts=$("$headprune" eval "$run" --sts "$shared/stsb/sts-dev.csv" --json |
          python3 -c 'import json,sys; print(round(json.load(sys.stdin)["sts"]["spearman"], 2))')
    read -r heads cosine < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))
print(s["heads_kept"], round(s["fidelity"]["mean_cosine"], 4))' "$run/headprune/summary.json")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$corpus" "$seed" "$sts" "$heads" "$cosine" "$seconds" | tee -a "$results"
  done
done
