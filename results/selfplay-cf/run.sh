#!/bin/bash
# Issue 25: the shipped self-play run continued with its tribute learned in the trainer.
# From the shipped run's last checkpoint (results/selfplay-shipped/latest.pt: 127.3M learner
# samples, 10,802.7 s of training on this 2-core machine), with counterfactual tribute values
# for 30% of the learner's tribute choices (tribute_counterfactual, docs/training.md), two
# engines of 2-player matches (the size furthest behind ISMCTS), a fresh learning-rate decay
# from 1e-4 (x 0.5 at the start: the schedule counts the run's seconds), and one pipelined
# collector on Ray (the fastest placement here); each evaluation also plays 40 matches against
# ISMCTS (eval_search) for the learning curve against search. max_seconds 21600 is the 6-hour
# budget for the whole agent, the shipped run's 10,802.7 s included (seconds count across
# resumes). Resumable: run it again and it continues from its checkpoint (--resume).
set -e
OUT=${OUT:-runs}
ckpt="$OUT/selfplay-cf/checkpoints/latest.pt"
saved=results/selfplay-cf/run  # the run as the last session left it (committed)
if [ ! -f "$ckpt" ] && [ -f "$saved/checkpoints/latest.pt" ]; then
  mkdir -p "$OUT/selfplay-cf" runs/ppo-shipped/policies
  cp -rn "$saved"/. "$OUT/selfplay-cf/"
  cp -n results/selfplay-shipped/policies/snapshot_*.npz runs/ppo-shipped/policies/
fi
if [ -f "$ckpt" ]; then
  dragons-egg train --resume "$ckpt"
else
  # the checkpoint's league: its last five snapshots, where its run kept them
  mkdir -p runs/ppo-shipped/policies
  cp -n results/selfplay-shipped/policies/snapshot_*.npz runs/ppo-shipped/policies/
  dragons-egg train --resume results/selfplay-shipped/latest.pt --out-dir "$OUT" \
    --run-name selfplay-cf --max-seconds 21600 --learning-rate 1e-4 \
    --tribute-counterfactual 0.3 --table-sizes 2 2 3 4 5 6 7 8 --collectors 1 \
    --eval-every 10000000 --eval-search ismcts --eval-search-matches 40 --eval-workers 2 \
    --checkpoint-every 2000000 --no-progress
fi
