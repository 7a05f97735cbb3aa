#!/bin/sh
# Machine instructions per W1 tool step as V8's baseline tiers run it (--no-opt --no-maglev), counted by valgrind
# (cachegrind without its cache simulation), for each dist folder given: the count of a process that runs 50
# warm-up runs and then LONG runs, minus that of one that runs SHORT, over the (LONG - SHORT) * 10 steps between.
# A count, not a time: it does not move with the machine's load (each figure is the median of REPEAT pairs).
#   sh bench/experiments/instructions-per-step.sh <dist>... (env SHORT=20 LONG=120 REPEAT=1 FLAGS=<more V8 flags>)
cd "$(dirname "$0")/../.." || exit 1
SHORT=${SHORT:-20}
LONG=${LONG:-120}
REPEAT=${REPEAT:-1}
count() {
  valgrind --tool=cachegrind --cache-sim=no --smc-check=all-non-file --cachegrind-out-file=/dev/null \
    node --no-opt --no-maglev $FLAGS bench/experiments/w1-loop.ts - "$1" "$2" 2>&1 |
    sed -n 's/.*I *refs: *//p' | tr -d ,
}
for dist in "$@"; do
  figures=""
  i=0
  while [ "$i" -lt "$REPEAT" ]; do
    short=$(count "$dist" "$SHORT")
    long=$(count "$dist" "$LONG")
    figures="$figures $(( (long - short) / ((LONG - SHORT) * 10) ))"
    i=$((i + 1))
  done
  echo "$dist instructions per step:$figures"
done
