#!/bin/bash
# Issue 25: a candidate agent with twice the 2-player share of the shipped agent's training.
# Why: at 2 players the shipped agent is behind ISMCTS-200 by -0.684 [-0.884, -0.480], and its
# run was still gaining there fast when its budget ran out: its saved policies against its
# final one at 2 players went from -2.584 at 130M learner samples to -0.320 at 210M
# (results/selfplay-egg/trajectory-2p). Otherwise the shipped agent's run
# (results/selfplay-tt/run.sh) again, from the same checkpoint (results/selfplay-shipped/
# latest.pt: 127.3M learner samples, 10,802.7 s) with the same settings, but four engines of
# 2-player matches where it had two (--table-sizes 2 2 2 2 3 4 5 6 7 8: 2 players get 4 of 10
# engines, not 2 of 8), so the two differ by the table mix alone. max_seconds 21600 is the
# issue's 6-hour budget for the whole agent, the checkpoint's 10,802.7 s included.
# Resumable: run it again and it continues from its checkpoint; Ctrl-C or SIGTERM saves one.
# The steps every candidate shares: results/continue-shipped.sh.
bash results/continue-shipped.sh selfplay-2p --max-seconds 21600 \
  --tribute-counterfactual 0.3 --tribute-table --table-sizes 2 2 2 2 3 4 5 6 7 8
