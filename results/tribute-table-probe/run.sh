#!/bin/bash
# The give-back table probe (docs/training.md, "A give-back table in the trainer"): the shipped
# agent's run's last checkpoint (runs/selfplay-cf/checkpoints/latest.pt, 213.5M samples, 21,607 s;
# bash results/selfplay-cf/run.sh puts it there from results/selfplay-cf/run) trained on with
# --tribute-table for 743 s at a learning rate of 3e-6 (the network almost frozen: the probe asks
# what the table learns, not the network), every tribute decision played out (the checkpoint's
# share, 1.0), then the tribute analysis of its final policy at 4 and 3 players on seed 78's
# 20,000 deal sequences. A probe: past the 6-hour budget, not an agent to ship.
set -e
dragons-egg train --resume runs/selfplay-cf/checkpoints/latest.pt --run-name probe-table \
  --max-seconds 22350 --learning-rate 3e-6 --lr-schedule constant --tribute-table \
  --tribute-table-window 5000 --eval-every 0 --eval-search --checkpoint-every 1000000 \
  --collectors 1 --no-progress
for n in 4 3; do
  dragons-egg tribute-analysis --tribute ppo:path=runs/probe-table/final.npz --players $n \
    --deals 20000 --seed 78 --workers 2 --policies heuristic,learned,learned-ask,learned-give \
    --out runs/probe-table/tribute-${n}p
done
