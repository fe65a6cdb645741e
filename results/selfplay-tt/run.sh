#!/bin/bash
# Issue 25: the next candidate agent, the shipped agent's run again with its give-back table
# learned in the trainer (--tribute-table, docs/training.md, "A give-back table in the trainer").
# From the same checkpoint and with the same settings as results/selfplay-cf/run.sh's first
# phase (results/selfplay-shipped/latest.pt: 127.3M learner samples, 10,802.7 s of training;
# counterfactual values for 30% of the learner's tribute choices, two engines of 2-player
# matches, a learning-rate decay from 1e-4, one pipelined collector on Ray, 40 matches against
# ISMCTS at each evaluation), plus the give-back table beside the network. max_seconds 21600 is
# the 6-hour budget for the whole agent, the checkpoint's 10,802.7 s included.
# Resumable: run it again and it continues from its checkpoint (--resume); a Ctrl-C or SIGTERM
# saves one first.
set -e
OUT=${OUT:-runs}
ckpt="$OUT/selfplay-tt/checkpoints/latest.pt"
saved=results/selfplay-tt/run  # the run as the last session left it (committed)
if [ ! -f "$ckpt" ] && [ -f "$saved/checkpoints/latest.pt" ]; then
  mkdir -p "$OUT/selfplay-tt" runs/ppo-shipped/policies
  cp -rn "$saved"/. "$OUT/selfplay-tt/"
  cp -n results/selfplay-shipped/policies/snapshot_*.npz runs/ppo-shipped/policies/
fi
if [ -f "$ckpt" ]; then
  dragons-egg train --resume "$ckpt"
else
  # the checkpoint's league: its last five snapshots, where its run kept them
  mkdir -p runs/ppo-shipped/policies
  cp -n results/selfplay-shipped/policies/snapshot_*.npz runs/ppo-shipped/policies/
  dragons-egg train --resume results/selfplay-shipped/latest.pt --out-dir "$OUT" \
    --run-name selfplay-tt --max-seconds 21600 --learning-rate 1e-4 \
    --tribute-counterfactual 0.3 --tribute-table --table-sizes 2 2 3 4 5 6 7 8 --collectors 1 \
    --eval-every 10000000 --eval-search ismcts --eval-search-matches 40 --eval-workers 2 \
    --checkpoint-every 2000000 --no-progress
fi
