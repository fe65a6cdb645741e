#!/bin/bash
# Issue 25: where the shipped agent loses its 2-player matches to ISMCTS-200 (results/selfplay-2p/
# README.md, "Where the 2-player gap is"). Light enough to run beside a training run at nice 19
# on one worker (about 10 minutes, most of it the tournament), as it was on 4 December 2026,
# with --out /tmp/ana/... and the folders then copied here (their config files name /tmp).
# 1. The rounds of the committed 2-player tournament against ISMCTS-200, and the same first 300
#    deal sequences (seed 2602) with the tribute off (tribute_asks=0).
# 2. The tribute choices of ISMCTS-200 and of the agent, each under the agent's play at both
#    seats, on the same 300 deal sequences (seed 2640).
set -e
OUT=${OUT:-results/selfplay-2p/gap-2p}
agent=ppo:path=results/selfplay-tt/run/final.npz
[ -f "$OUT/ppo-ismcts-no-tribute/summary.json" ] || \
  nice -n 19 dragons-egg tournament "$agent" ismcts --players 2 --matches 300 --seed 2602 \
    --rule tribute_asks=0 --workers 1 --out "$OUT/ppo-ismcts-no-tribute"
# Round by round: the "By round" section of each folder's report.md (a folder written before
# the section existed gains it on `dragons-egg tournament --resume DIR`).
for tribute in ismcts ppo; do
  spec=$tribute; [ "$tribute" = ppo ] && spec=$agent
  [ -f "$OUT/tribute-$tribute/summary.json" ] || \
    nice -n 19 dragons-egg tribute-analysis --tribute "$spec" --play "$agent" --players 2 \
      --deals 300 --seed 2640 --policies heuristic,learned,learned-ask,learned-give \
      --engine scalar --workers 1 --no-progress --out "$OUT/tribute-$tribute"
done
