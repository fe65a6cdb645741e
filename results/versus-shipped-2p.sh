#!/bin/bash
# Saved policies of a candidate run against the agent shipped before them
# (results/selfplay-tt/run/final.npz) at 2 players: 1,000 duplicate matches each on seed 2632,
# the seed of `measure.sh previous` at 2 players, so that rows of different runs compare.
#
#   bash results/versus-shipped-2p.sh OUT PREFIX POLICY.npz...
#
# Run from the repository root. POLICY run/policies/policy_<samples>.npz plays into the folder
# OUT/PREFIX<samples>; a folder already done is skipped, so it can run again as a run goes on.
# A ppo-vs-ppo tournament takes about half a minute on one core, at nice 19: light beside a
# training run (WORKERS=1, the default). Used by results/selfplay-{egg,2p}/trajectory.sh.
set -e
out=${1:?usage: bash results/versus-shipped-2p.sh OUT PREFIX POLICY.npz...}
prefix=${2?usage: bash results/versus-shipped-2p.sh OUT PREFIX POLICY.npz... (PREFIX may be empty)}
shift 2
WORKERS=${WORKERS:-1}
shipped="ppo:path=results/selfplay-tt/run/final.npz"
for p in "$@"; do
  dir="$out/$prefix$(basename "$p" .npz | cut -d_ -f2)"
  if [ -f "$dir/summary.json" ]; then echo "$dir: done"; continue; fi
  nice -n 19 dragons-egg tournament "ppo:path=$p" "$shipped" --players 2 --matches 1000 \
    --seed 2632 --workers "$WORKERS" --out "$dir" --no-progress > /dev/null
  grep -A2 "^| pair" "$dir/report.md" || echo "$dir: no pair line in its report"
done
