#!/bin/bash
# Continue the shipped self-play run from its 127.3M-sample checkpoint as a new candidate run.
#
#   bash results/continue-shipped.sh NAME [TRAIN OPTIONS...]
#
# Run from the repository root. The candidate is the run NAME under $OUT (default runs/):
# - first call: `dragons-egg train --resume results/selfplay-shipped/latest.pt` (127,349,416
#   learner samples, 10,802.7 s of training) with the settings every candidate shares (below)
#   and TRAIN OPTIONS, which name what this candidate changes and its --max-seconds budget;
# - later calls: it resumes $OUT/NAME/checkpoints/latest.pt with its saved settings (TRAIN
#   OPTIONS are then not used). Where that checkpoint is missing (a fresh clone), it first
#   copies back the run as a session committed it, results/NAME/run/, without overwriting a
#   file already there.
# Ctrl-C or SIGTERM stops the trainer with a checkpoint saved. The checkpoint's league (its last
# five snapshots) is kept where its run kept it, runs/ppo-shipped/policies/, restored there from
# git history where a fresh clone lacks it.
# Used by results/selfplay-{cf,tt,st,egg,2p}/run.sh, each the exact command of its run.
set -e
name=${1:?usage: bash results/continue-shipped.sh NAME [TRAIN OPTIONS...]}
shift
OUT=${OUT:-runs}
ckpt="$OUT/$name/checkpoints/latest.pt"
saved="results/$name/run"  # the run as the last session left it (committed)
# The league's five snapshots left results/ with the other intermediate snapshots (commit
# cf9bde2); they are restored from the commit before it, without overwriting a file there.
league_commit=cf9bde2^
. results/restore-from-git.sh
for s in 80111760 90143444 100153168 110173614 120179708; do
  restore_from_git "$league_commit:results/selfplay-shipped/policies/snapshot_$s.npz" \
    "runs/ppo-shipped/policies/snapshot_$s.npz"
done
if [ ! -f "$ckpt" ] && [ -f "$saved/checkpoints/latest.pt" ]; then
  mkdir -p "$OUT/$name" && cp -rn "$saved"/. "$OUT/$name/"
fi
if [ -f "$ckpt" ]; then
  exec dragons-egg train --resume "$ckpt"
fi
# shared by every candidate: a learning-rate decay from 1e-4, one pipelined collector on Ray,
# 40 matches against ISMCTS at each evaluation (every 10M samples), a checkpoint every 2M
exec dragons-egg train --resume results/selfplay-shipped/latest.pt --out-dir "$OUT" \
  --run-name "$name" --learning-rate 1e-4 --collectors 1 \
  --eval-every 10000000 --eval-search ismcts --eval-search-matches 40 --eval-workers 2 \
  --checkpoint-every 2000000 --no-progress "$@"
