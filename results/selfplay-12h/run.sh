#!/bin/bash
# Issue 49: the shipped agent's run trained on to the 12-hour budget.
#
#   PATH=$PWD/.venv/bin:$PATH bash results/selfplay-12h/run.sh     (from the repository root)
#
# Why: no lever of the first comparison (docs/training.md, "The strongest player's levers")
# beat the shipped recipe at 10M samples, and the shipped run was still gaining at 2 players,
# where it is furthest behind ISMCTS-200, when its 6-hour budget ran out. So the budget's
# other 6 hours go to the shipped run itself: the same trainer, settings and league, resumed
# from its final checkpoint (248,692,554 learner samples, 21,595.5 training seconds; it left
# results/ in commit 82635d1 and is restored from the commit before it) with max_seconds 43200,
# the 12 hours counting the first 6. The linear learning-rate decay follows the run's share of
# max_seconds, so it goes on from about 5.1e-5 (half the budget) down to 2e-6 at 43,200 s.
#
# Resumable: run it again and it continues from runs/selfplay-12h/checkpoints/latest.pt;
# Ctrl-C or SIGTERM stops the trainer with a checkpoint saved. A session that stops it commits
# the run folder's resumable part (runs/selfplay-12h: the checkpoint, the league snapshots it
# names, the logs) with `git add -f`, so a fresh clone resumes from it.
set -e
OUT=runs
name=selfplay-12h
ckpt="$OUT/$name/checkpoints/latest.pt"
shipped=82635d1^:results/selfplay-2p/run  # the shipped run's folder, before it left results/

. results/restore-from-git.sh

# the league the shipped checkpoint names (its last five snapshots), where its run kept them
for s in 200584659 210628003 220672379 230724108 240765603; do
  restore_from_git "$shipped/policies/snapshot_$s.npz" "runs/selfplay-2p/policies/snapshot_$s.npz"
done
if [ -f "$ckpt" ]; then
  exec dragons-egg train --resume "$ckpt"
fi
restore_from_git "$shipped/checkpoints/latest.pt" runs/selfplay-2p/checkpoints/latest.pt
exec dragons-egg train --resume runs/selfplay-2p/checkpoints/latest.pt --out-dir "$OUT" \
  --run-name "$name" --max-seconds 43200
