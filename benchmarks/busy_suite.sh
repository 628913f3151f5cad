#!/usr/bin/env bash
# The test suite on a busy machine (issue 45, finding 12): `make test` RUNS times in a row (2 by
# default) while a CPU burner keeps every core busy, as CI machines shared with other jobs are.
# Prints each run's result line and exit status, and exits non-zero if any run failed.
#
#     benchmarks/busy_suite.sh [RUNS]
#
# The burners are plain busy loops at normal priority, one per core (nproc), started before the
# first run and stopped (by their process ids) when the script ends, however it ends. The suite
# runs at normal priority too: it competes for the cores, it is not favoured. The result lines
# go to benchmarks/RESULTS.md by hand, with the date and the machine's load.
set -u
runs="${1:-2}"
cd "$(dirname "$0")/.."
cores="$(nproc)"
burners=()
stop_burners() {
  for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
}
trap stop_burners EXIT INT TERM
for _ in $(seq "$cores"); do
  ( while :; do :; done ) &
  burners+=("$!")
done
echo "busy_suite: $cores CPU burners running (pids ${burners[*]}); $runs run(s) of make test"
failed=0
for run in $(seq "$runs"); do
  log="$(mktemp -t evidex-busy-suite-XXXXXX.log)"
  started="$(date +%s)"
  make test >"$log" 2>&1
  status=$?
  seconds=$(( $(date +%s) - started ))
  echo "run $run: exit $status in ${seconds}s, load $(cut -d' ' -f1-3 /proc/loadavg): $(grep -E '[0-9]+ (passed|failed)' "$log" | tail -1)"
  if [ "$status" -ne 0 ]; then
    failed=1
    grep -E '^(FAILED|ERROR) ' "$log" | sed "s/^/  run $run: /"
  fi
  echo "  log: $log"
done
exit "$failed"
