#!/bin/bash
# Issue 25: the shipped self-play run's last checkpoint continued with search targets (expert
# iteration, docs/training.md "Search targets"), within the 6-hour budget.
#
# 1. Search targets: ismcts-net (100 iterations a move) guided by the network of that
#    checkpoint (results/selfplay-shipped/latest.pt: 127,349,416 samples, 10,802.7 s),
#    exported by `dragons-egg ship` to results/selfplay-st/teacher-127m.npz, plays at every
#    seat of 2- and 4-player tables (three batches of 2 players for one of 4: the duel is
#    where the search and the network differ most, and where ppo is furthest behind ISMCTS),
#    for 3,600 s on both cores. Seed 2650, fixed before the run.
# 2. Training: the checkpoint resumed with those targets fitted in every minibatch
#    (search_coef 4, 1,024 decisions a minibatch: at search_coef 1 with 256, a first start
#    drifted away from the search, README), otherwise the settings of results/selfplay-cf
#    (learning rate 1e-4 decaying, two 2-player engines, one pipelined collector, ISMCTS in
#    the evaluations) without the counterfactual tribute. max_seconds is 21,600 s (6 hours)
#    minus the gathering's seconds: the checkpoint's 10,802.7 s count, as the targets' do.
# Resumable: run it again and each step continues where it stopped.
set -e
here=results/selfplay-st
targets="$here/targets"
teacher="$here/teacher-127m.npz"
if [ ! -f "$teacher" ]; then
  dragons-egg ship results/selfplay-shipped/latest.pt --dest "$teacher" --note "the shipped \
self-play run's last checkpoint (127,349,416 samples, 10,802.7 s): the search targets' guide"
fi
if [ ! -f "$targets/summary.json" ]; then
  if [ -f "$targets/settings.json" ]; then
    dragons-egg search-targets --resume "$targets" --workers 2
  else
    dragons-egg search-targets --policy "$teacher" --players 2 2 2 4 --iterations 100 \
      --matches-per-batch 4 --seconds 3600 --workers 2 --seed 2650 --out "$targets"
  fi
fi
# Training, through the steps every candidate shares (results/continue-shipped.sh); the budget
# is used only at the first start (a resume keeps its saved settings).
gathered=$(python -c "import json; print(json.load(open('$targets/summary.json'))['seconds'])")
budget=$(python -c "import math; print(math.floor(21600 - $gathered))")
bash results/continue-shipped.sh selfplay-st --max-seconds "$budget" \
  --search-targets "$targets" --search-coef 4.0 --search-batch 1024 \
  --table-sizes 2 2 3 4 5 6 7 8
