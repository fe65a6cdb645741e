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
# The steps every candidate shares: results/continue-shipped.sh.
set -e
bash results/continue-shipped.sh selfplay-cf --max-seconds 21600 \
  --tribute-counterfactual 0.3 --table-sizes 2 2 3 4 5 6 7 8
