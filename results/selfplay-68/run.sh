#!/bin/bash
# Issue 25: a candidate agent with twice the 6- to 8-player share of the shipped agent's
# training. Why: against ISMCTS-200 the shipped agent (results/selfplay-2p/run/final.npz) is
# level at 6 players (-0.053) and behind at 7 (-0.086) and 8 (-0.082), and its tribute is level
# with the heuristic's from 5 players up; its run gave those sizes one engine in ten each.
# Otherwise the shipped agent's run (results/selfplay-2p/run.sh) again, from the same
# checkpoint (results/selfplay-shipped/latest.pt: 127.3M learner samples, 10,802.7 s) with the
# same settings and the same four engines of 2-player matches, but two engines each of 6, 7
# and 8 players where it had one (--table-sizes 2 2 2 2 3 4 5 6 6 7 7 8 8: 6 of 13 engines,
# not 3 of 10), so the two differ by the table mix alone. max_seconds 21600 is the issue's
# 6-hour budget for the whole agent, the checkpoint's 10,802.7 s included.
# Resumable: run it again and it continues from its checkpoint; Ctrl-C or SIGTERM saves one.
# The steps every candidate shares: results/continue-shipped.sh.
bash results/continue-shipped.sh selfplay-68 --max-seconds 21600 \
  --tribute-counterfactual 0.3 --tribute-table --table-sizes 2 2 2 2 3 4 5 6 6 7 7 8 8
