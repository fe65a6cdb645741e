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
# The steps every candidate shares: results/continue-shipped.sh.
set -e
bash results/continue-shipped.sh selfplay-tt --max-seconds 21600 \
  --tribute-counterfactual 0.3 --tribute-table --table-sizes 2 2 3 4 5 6 7 8
