#!/bin/bash
# Issue 25: this run's saved policies against the shipped agent at 2 players, as
# results/selfplay-egg/trajectory.sh plays the two runs before it (same seed 2632, 1,000
# matches each, so the rows compare at equal samples: the shipped agent's run was at -2.212 at
# 150.2M, -1.460 at 170.3M, -0.872 at 190.3M and -0.320 at 210.3M). Every policy the run has
# saved so far (the live run folder, else the committed one), each once
# (results/versus-shipped-2p.sh skips a folder already done).
#   WORKERS=1 bash results/selfplay-2p/trajectory.sh
set -e
policies=runs/selfplay-2p/policies
[ -d "$policies" ] || policies=results/selfplay-2p/run/policies
exec bash results/versus-shipped-2p.sh results/selfplay-2p/trajectory-2p "" "$policies"/policy_*.npz
