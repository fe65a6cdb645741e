#!/bin/bash
# Issue 25: a candidate agent that learns the Egg holder's plays from their play-outs
# (--egg-counterfactual, docs/training.md, "The Egg holder's plays played out").
# Why: against ISMCTS at 6 players, a seat of the shipped agent that is passed the Egg ends
# the round holding it 53% of the time, a seat of ISMCTS 29% (results/selfplay-egg/README.md).
# Otherwise the shipped agent's run (results/selfplay-tt/run.sh) again, from the same
# checkpoint (results/selfplay-shipped/latest.pt: 127.3M learner samples, 10,802.7 s) with
# the same settings, so the two differ by the Egg holder's play-outs alone: 10% of the
# learner's play decisions with a choice made while holding the Egg. max_seconds 21600 is the
# issue's 6-hour budget for the whole agent, the checkpoint's 10,802.7 s included.
# Resumable: run it again and it continues from its checkpoint; Ctrl-C or SIGTERM saves one.
# The steps every candidate shares: results/continue-shipped.sh.
bash results/continue-shipped.sh selfplay-egg --max-seconds 21600 \
  --tribute-counterfactual 0.3 --tribute-table --egg-counterfactual 0.1 \
  --table-sizes 2 2 3 4 5 6 7 8
