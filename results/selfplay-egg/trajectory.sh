#!/bin/bash
# Where along the run the candidate fell behind the shipped agent at 2 players: policies each
# run saved (run/policies here; results/selfplay-tt/run/policies, the same run without
# --egg-counterfactual) against the shipped agent (results/selfplay-tt/run/final.npz) at
# 2 players, 1,000 duplicate matches each on the seed of `measure.sh previous` (2632), by
# results/versus-shipped-2p.sh. Resumable: a finished tournament is skipped.
#   WORKERS=1 bash results/selfplay-egg/trajectory.sh
set -e
out=results/selfplay-egg/trajectory-2p
egg=results/selfplay-egg/run/policies
tt=results/selfplay-tt/run/policies
bash results/versus-shipped-2p.sh $out egg- \
  $egg/policy_{130200472,150231558,170257388,190278243,212999006}.npz
bash results/versus-shipped-2p.sh $out tt- \
  $tt/policy_{130203418,150244082,170270211,190293218,210322507}.npz
