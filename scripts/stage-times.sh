# Stage clock for scripts/test (sourced, not run): times each stage of the run, prints a table
# at the end (passed or not) and writes it as JSON, and with --budget checks the run against
# scripts/test-budget.json. docs/testing.md says what each stage costs and why.
#
#   stage NAME CMD...        runs CMD in the foreground as stage NAME (its exit status returned)
#   stage_bg NAME CMD...     starts CMD in the background as stage NAME, output to a log file
#   stage_wait NAME          waits for a background stage, prints its log, returns its status
#   stage_report FILE        prints the table, writes FILE (JSON); with STAGE_BUDGET=1 also
#                            fails when the run or a stage is over budget
#
# Times are wall-clock seconds from the start of the run (date +%s.%N). Background stages run
# beside foreground ones, so the stage times add up to more than the run's wall time.
#
# The records are one machine's (the 2-core AMD EPYC of the fresh roots); CI's 2-core machines
# differ by up to half in speed, every stage alike. The budget is judged in the records' terms:
# the machine factor is the median, over the compute-bound stages recorded at 100 s or more, of
# seconds / recorded (never below 1), and the limits are multiplied by it. One slow stage moves
# the median little and still fails its own limit; a run that is slow everywhere is the machine.
# The whole run must also stay under "whole run ceiling", unscaled: CI's hard 90 minutes less a
# margin (docs/testing.md).

STAGE_T0=$(date +%s.%N)
STAGE_NAMES=()
declare -A STAGE_START STAGE_END STAGE_STATUS STAGE_PID STAGE_LOG
STAGE_LOG_DIR=${STAGE_LOG_DIR:-$(mktemp -d)}

stage_now() { awk -v t0="$STAGE_T0" -v t="$(date +%s.%N)" 'BEGIN { printf "%.1f", t - t0 }'; }

stage() {
  local name=$1; shift
  STAGE_NAMES+=("$name"); STAGE_START[$name]=$(stage_now)
  echo "== [$(stage_clock "${STAGE_START[$name]}")] $name =="
  local status=0
  "$@" || status=$?
  STAGE_END[$name]=$(stage_now); STAGE_STATUS[$name]=$status
  echo "== $name: $(stage_seconds "$name") s$( ((status)) && echo ", FAILED (exit $status)") =="
  return "$status"
}

stage_bg() {
  local name=$1; shift
  STAGE_NAMES+=("$name"); STAGE_START[$name]=$(stage_now)
  STAGE_LOG[$name]="$STAGE_LOG_DIR/bg-${#STAGE_NAMES[@]}.log"
  echo "== [$(stage_clock "${STAGE_START[$name]}")] $name (in the background; its output follows when it ends) =="
  # The stage's end time is written by the background job itself, into a file read by stage_wait.
  ( status=0; "$@" >"${STAGE_LOG[$name]}" 2>&1 || status=$?
    echo "$(stage_now) $status" >"${STAGE_LOG[$name]}.end"; exit "$status" ) &
  STAGE_PID[$name]=$!
}

stage_wait() {
  local name=$1 status=0
  wait "${STAGE_PID[$name]}" || status=$?
  echo "== $name (background) output: =="
  cat "${STAGE_LOG[$name]}"
  if [ -f "${STAGE_LOG[$name]}.end" ]; then
    # (read cannot assign to an array element whose key holds spaces: through a local)
    local end_seconds
    read -r end_seconds status <"${STAGE_LOG[$name]}.end"
    STAGE_END[$name]=$end_seconds
  else
    STAGE_END[$name]=$(stage_now)
  fi
  STAGE_STATUS[$name]=$status
  echo "== $name: $(stage_seconds "$name") s$( ((status)) && echo ", FAILED (exit $status)") =="
  return "$status"
}

stage_clock() { awk -v s="$1" 'BEGIN { printf "%d:%02d", s / 60, s % 60 }'; }

stage_seconds() {
  local name=$1
  awk -v a="${STAGE_START[$name]}" -v b="${STAGE_END[$name]:-$(stage_now)}" 'BEGIN { printf "%.1f", b - a }'
}

# The budget of a stage: its recorded seconds from scripts/test-budget.json, empty if none.
stage_recorded() {
  local file=$1 name=$2
  [ -f "$file" ] || return 0
  # One "name": seconds pair per line (the file is written that way; see its _comment).
  grep -F "\"$name\":" "$file" | head -1 | sed -E 's/.*: *([0-9.]+).*/\1/'
}

# The machine factor (above): median of seconds / recorded over the finished stages recorded at
# >= 100 s, except the network-bound system packages; 1 when it would be below 1 or none qualify.
stage_machine_factor() {
  local budget_file=$1 name rec
  for name in "${STAGE_NAMES[@]}"; do
    [ -n "${STAGE_END[$name]:-}" ] && [[ "$name" != "system packages"* ]] || continue
    rec=$(stage_recorded "$budget_file" "$name")
    [ -n "$rec" ] && awk -v r="$rec" 'BEGIN { exit !(r >= 100) }' || continue
    awk -v s="$(stage_seconds "$name")" -v r="$rec" 'BEGIN { printf "%.6f\n", s / r }'
  done | sort -g | awk '{ v[NR] = $1 } END {
    m = NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 1
    printf "%.3f", m < 1 ? 1 : m }'
}

stage_report() {
  local json=$1 budget_file=${STAGE_BUDGET_FILE:-scripts/test-budget.json}
  local total; total=$(stage_now)
  local factor; factor=$(stage_machine_factor "$budget_file")
  local max_total; max_total=$(stage_recorded "$budget_file" "whole run limit")
  [ -n "$max_total" ] && max_total=$(awk -v l="$max_total" -v f="$factor" 'BEGIN { printf "%.0f", l * f }')
  local ceiling; ceiling=$(stage_recorded "$budget_file" "whole run ceiling")
  local slack; slack=$(stage_recorded "$budget_file" "stage slack seconds")
  local over=() rows=() name rec limit secs status
  echo
  echo "== stage times (wall clock; background stages overlap the others) =="
  printf '%-44s %7s %8s %9s %7s  %s\n' stage start seconds recorded limit status
  for name in "${STAGE_NAMES[@]}"; do
    secs=$(stage_seconds "$name"); status=${STAGE_STATUS[$name]:-unfinished}
    case "$status" in 0) status=passed ;; unfinished) ;; *) status="failed (exit $status)" ;; esac
    rec=$(stage_recorded "$budget_file" "$name"); limit=""
    # A stage may take 50% more than recorded (in the records' terms: times the machine factor),
    # and never less than the slack on top of it (seconds-long stages vary by more than half
    # between machines without being slower).
    [ -n "$rec" ] && limit=$(awk -v r="$rec" -v s="${slack:-0}" -v f="$factor" \
      'BEGIN { r *= f; l = 1.5 * r; if (l < r + s) l = r + s; printf "%.0f", l }')
    if [ -n "$limit" ] && awk -v a="$secs" -v l="$limit" 'BEGIN { exit !(a > l) }'; then
      over+=("$name: $secs s against a limit of $limit s (recorded $rec s)")
      status="$status, OVER BUDGET"
    fi
    printf '%-44s %7s %8s %9s %7s  %s\n' "$name" "$(stage_clock "${STAGE_START[$name]}")" "$secs" \
      "${rec:--}" "${limit:--}" "$status"
    rows+=("$(printf '    {"name": "%s", "start_seconds": %s, "seconds": %s, "recorded_seconds": %s, "limit_seconds": %s, "status": "%s"}' \
      "$name" "${STAGE_START[$name]}" "$secs" "${rec:-null}" "${limit:-null}" "$status")")
  done
  printf '%-44s %7s %8s %9s %7s\n' "whole run" "" "$total" "" "${max_total:--}"
  echo "machine factor $factor (median of seconds / recorded over the compute-bound stages; limits x factor)"
  mkdir -p "$(dirname "$json")"
  { printf '{\n  "total_seconds": %s,\n  "budget_total_seconds": %s,\n  "ceiling_seconds": %s,\n  "machine_factor": %s,\n  "stages": [\n' \
      "$total" "${max_total:-null}" "${ceiling:-null}" "$factor"
    local IFS=$'\n'; printf '%s\n' "${rows[*]}" | sed '$!s/$/,/'
    printf '  ]\n}\n'; } >"$json"
  echo "stage times written to $json"
  [ "${STAGE_BUDGET:-0}" = 1 ] || return 0
  if [ ! -f "$budget_file" ]; then
    echo "scripts/test --budget: no budget file $budget_file" >&2
    return 1
  fi
  if [ -n "$max_total" ] && awk -v a="$total" -v l="$max_total" 'BEGIN { exit !(a > l) }'; then
    over+=("the whole run: $total s against its limit of $max_total s (machine factor $factor)")
  fi
  if [ -n "$ceiling" ] && awk -v a="$total" -v l="$ceiling" 'BEGIN { exit !(a > l) }'; then
    over+=("the whole run: $total s against its ceiling of $ceiling s, whatever the machine")
  fi
  if ((${#over[@]})); then
    echo "scripts/test --budget: over budget ($budget_file):" >&2
    printf '  %s\n' "${over[@]}" >&2
    echo "  Find what made it slower (the stage's output above), or, if the cost is deliberate," \
         "re-record the stage in $budget_file and say why in docs/testing.md." >&2
    return 1
  fi
  echo "scripts/test --budget: within budget (whole run <= $max_total s and <= $ceiling s; each stage <=" \
       "1.5 x its recorded time, machine factor $factor)"
}
