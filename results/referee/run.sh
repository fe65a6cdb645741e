#!/usr/bin/env bash
# Issue 50: play and record referee tournaments, one after another.
#
#   bash results/referee/run.sh ppo-4p ppo-6p ismcts-net-2p ...
#
# Each TAG is AGENT-Np: OpenSpiel's Python ISMCTS (50 iterations a move) in one seat and the
# built-in AGENT in the other N-1, 300 matches on duplicate deals, seed 5050N, in
# runs/referee/TAG. A tournament already begun there is resumed (--resume), never replayed.
# A finished one is recorded under results/referee/TAG (config, summary, report, plots, the
# match lines compressed, command.txt), then the plot and the leaderboard page are redrawn.
# Run from the repository root with the project's venv on PATH.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: bash results/referee/run.sh AGENT-Np..." >&2; exit 2; }
tag_re='^([a-z0-9-]+)-([2-8])p$'  # AGENT-Np
for tag in "$@"; do
  [[ "$tag" =~ $tag_re ]] || { echo "bad tag '$tag': want AGENT-Np, N in 2..8" >&2; exit 2; }
done
for tag in "$@"; do
  [[ "$tag" =~ $tag_re ]]
  agent=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]}
  out=runs/referee/$tag rec=results/referee/$tag
  if [ -e "$rec/summary.json" ]; then echo "$rec is recorded already; skipped" >&2; continue; fi
  seats=$(printf "$agent %.0s" $(seq 2 "$n"))
  cmd="dragons-egg tournament openspiel-ismcts:iterations=50 ${seats% } --players $n --matches 300 --seed 5050$n --workers 2 --out $out"
  if [ -e "$out/config.json" ]; then
    dragons-egg tournament --resume "$out" --workers 2
  else
    $cmd
  fi
  mkdir -p "$rec"
  cp "$out"/{config.json,summary.json,report.md,results.jsonl} "$rec"/
  cp "$out"/*.png "$rec"/
  dragons-egg tournament compress "$rec"
  { echo "$cmd"
    echo "# issue 50: OpenSpiel's Python ISMCTS (50 iterations a move, random rollouts to the end of the"
    echo "# match) in one seat, our agent in every other, 300 matches on duplicate deals; run one after"
    echo "# another by results/referee/run.sh on this 2-core machine (the times a move in summary.json"
    echo "# are of this machine, shared with whatever else ran). The match lines are results.jsonl.gz"
    echo "# (dragons-egg tournament compress)."
  } > "$rec/command.txt"
  python results/referee/plot.py.txt
  cp results/referee/differences.png docs/leaderboard/referee-differences.png
  python -m dragons_egg.experiments.cli.leaderboard
done
