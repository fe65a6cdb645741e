#!/bin/bash
# Issue 25: this run's saved policies against the shipped agent at 2 players, as
# results/selfplay-egg/trajectory.sh plays the two runs before it (same seed 2632, 1,000
# matches each, so the rows compare at equal samples: the shipped agent's run was at -2.212 at
# 150.2M, -1.460 at 170.3M, -0.872 at 190.3M and -0.320 at 210.3M). Every policy the run has
# saved so far (the live run folder, else the committed one), each once: a folder already done
# is skipped, so it can run again as the run goes on. A ppo-vs-ppo tournament takes about half a
# minute on one core, light enough beside the run at nice 19 (WORKERS=1, the default).
set -e
WORKERS=${WORKERS:-1}
shipped="ppo:path=results/selfplay-tt/run/final.npz"
policies=runs/selfplay-2p/policies
[ -d "$policies" ] || policies=results/selfplay-2p/run/policies
for p in "$policies"/policy_*.npz; do
  dir="results/selfplay-2p/trajectory-2p/$(basename "$p" .npz | cut -d_ -f2)"
  if [ -f "$dir/summary.json" ]; then echo "$dir: done"; continue; fi
  nice -n 19 dragons-egg tournament "ppo:path=$p" "$shipped" --players 2 --matches 1000 \
    --seed 2632 --workers "$WORKERS" --out "$dir" --no-progress | grep -A2 "^| pair"
done
