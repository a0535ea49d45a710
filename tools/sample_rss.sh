#!/usr/bin/env bash
# Runs a command and samples its resident memory (VmRSS) every 0.5 s beside its output, to see
# which stage of a long job peaks (docs/results.md, "Lean later stages"). Writes OUT.rss
# ("seconds kB" per sample) and OUT.log (each output line prefixed by its second), then prints
# the peak and when it happened.
#
#   tools/sample_rss.sh OUT command [args...]
#   e.g. tools/sample_rss.sh /tmp/prune build-pypi/headprune prune /tmp/l1b/dense ... --no-bench -o /tmp/p
set -euo pipefail
if (($# < 2)); then sed -n '2,8p' "$0"; exit 2; fi
out="$1"; shift
start=$(date +%s.%N)
"$@" > >(while IFS= read -r line; do printf '%.1f %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$line"; done > "$out.log") 2>&1 &
pid=$!
: > "$out.rss"
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] && printf '%.1f %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$rss" >> "$out.rss"
  sleep 0.5
done
rc=0; wait "$pid" || rc=$?
awk '{ if ($2 > m) { m = $2; t = $1 } } END { printf "peak VmRSS %.2f GiB at %.1f s\n", m / 1048576, t }' "$out.rss"
exit "$rc"
