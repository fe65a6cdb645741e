#!/bin/bash
# Where along the run the candidate fell behind the shipped agent at 2 players: policies each
# run saved (run/policies here; results/selfplay-tt/run/policies, the same run without
# --egg-counterfactual) against the shipped agent (results/selfplay-tt/run/final.npz) at
# 2 players, 1,000 duplicate matches each on the seed of `measure.sh previous` (2632).
# Resumable: a finished tournament is skipped.
#   WORKERS=1 bash results/selfplay-egg/trajectory.sh
set -e
WORKERS=${WORKERS:-1}
shipped="ppo:path=results/selfplay-tt/run/final.npz"
egg=results/selfplay-egg/run/policies
tt=results/selfplay-tt/run/policies
for p in $egg/policy_{130200472,150231558,170257388,190278243,212999006}.npz \
         $tt/policy_{130203418,150244082,170270211,190293218,210322507}.npz; do
  case $p in $egg/*) run=egg ;; *) run=tt ;; esac
  dir="results/selfplay-egg/trajectory-2p/$run-$(basename "$p" .npz | cut -d_ -f2)"
  if [ -f "$dir/summary.json" ]; then echo "$dir: done"; continue; fi
  dragons-egg tournament "ppo:path=$p" "$shipped" --players 2 --matches 1000 --seed 2632 \
    --workers "$WORKERS" --out "$dir" --no-progress
done
