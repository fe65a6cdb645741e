#!/bin/bash
# Issue 24: learning quality per sample, the pipelined Ray trainer (1 collector, the default
# placement on 2 cores) beside the in-process one
# at an equal budget of 20M learner samples (the shipped run's settings, seed 5), each then
# measured with 1,000 duplicate matches against the heuristic at 4 players (seed 2024).
# Resumable: run it again and each run continues from its checkpoint (--resume).
set -e
OUT=${OUT:-runs/ray-budget}
common=(--config selfplay-shipped --seed 5 --total-samples 20000000 --max-seconds 0
        --eval-every 5000000 --eval-matches 200 --out-dir "$OUT" --no-progress)
for name in ray-pipelined in-process; do
  collectors=1; [ "$name" = in-process ] && collectors=0
  ckpt="$OUT/$name/checkpoints/latest.pt"
  if [ -f "$OUT/$name/final.npz" ] && [ -f "$OUT/$name/summary.json" ]; then
    echo "$name: done"
  elif [ -f "$ckpt" ]; then
    dragons-egg train --resume "$ckpt" --total-samples 20000000
  else
    dragons-egg train "${common[@]}" --collectors $collectors --run-name $name
  fi
done
for name in ray-pipelined in-process; do
  [ -f "$OUT/tournament-$name/summary.json" ] && continue
  dragons-egg tournament "ppo:path=$OUT/$name/final.npz" heuristic --players 4 \
    --matches 1000 --seed 2024 --workers 2 --out "$OUT/tournament-$name"
done
