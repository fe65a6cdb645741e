#!/bin/bash
# Issue 25's measures of a candidate agent, each on a seed chosen before it was played:
#   ppo - ismcts at every table size 2..8 (1,000 duplicate matches; 2,000 at 4 players),
#   ppo - ismcts:iterations=1000 at 4 players (1,000),
#   ismcts-net - ppo and ismcts-net - ismcts at 4 players (1,000 each, 100 iterations a move),
#   the learned tribute minus the heuristic's at every size, under the agent's own play and
#   under the heuristic's (20,000 deal sequences; 100,000 at 4 players), asks and give-backs
#   apart (learned-ask, learned-give);
#   the candidate against the agent shipped before it (PREVIOUS; by default the 4-player
#   give-back table, results/selfplay-shipped/v4, which this folder's candidate followed) at
#   every size (1,000 matches each; `previous`);
#   the candidate against the heuristic at every size (500 matches each; `heuristic`);
#   not part of `all`, `search1000`: ismcts-net (200 iterations) - ISMCTS-1000 at the sizes in
#   SIZES (300 matches each; issue 49's search target);
#   and, not part of `all`, ismcts-net - ismcts at 2 and 6 players (1,000 each;
#   `search-sizes`): whether the network-guided search is ahead where `ppo` is not. The
#   6-player one is the costliest measure here: 1.5 s a match on both cores with nothing
#   else running, 10 to 20 s a match on a slow or shared machine (the 2-player one about 20
#   minutes; 5 December 2026).
# `play` plays only the ppo - ismcts tournaments of `tournaments`, the same folders and seeds,
#   at the sizes in SIZES, in that order (default "2 3 4 5 6 7 8"): the measures that decide
#   whether a candidate ships, first where it was made to gain.
# Resumable: a finished measure is skipped; one cut short is resumed (--resume).
#   POLICY=FILE.npz OUT=DIR WORKERS=2 [PREVIOUS=FILE.npz] [SIZES="6 4"] bash results/selfplay-cf/measure.sh [previous|heuristic|tournaments|play|tribute|search-sizes|search1000]
# SEEDS=N moves every seed (default 2600, issue 25's); a fresh base gives fresh deals.
# DIV divides every count (DIV=100: a smoke test of minutes, not a measure).
set -e
POLICY=${POLICY:-results/selfplay-cf/policy.npz}
OUT=${OUT:-results/selfplay-cf}
WORKERS=${WORKERS:-2}
DIV=${DIV:-1}
# every seed is SEEDS plus a fixed offset per measure (2600: the seeds issue 25 chose)
SEEDS=${SEEDS:-2600}
what=${1:-all}
me="ppo:path=$POLICY"
v4="ppo:path=${PREVIOUS:-results/selfplay-shipped/v4/ppo_dragons_egg.npz}"
net="ismcts-net:path=$POLICY,iterations=100"

tournament() {  # DIR MATCHES SEED AGENT...
  local dir=$1 matches=$(( $2 / DIV )) seed=$3
  shift 3
  if [ -f "$dir/summary.json" ] && ! grep -q '"partial": true' "$dir/summary.json"; then
    echo "$dir: done"; return
  fi
  if [ -f "$dir/config.json" ]; then
    dragons-egg tournament --resume "$dir" --workers "$WORKERS"
  else
    dragons-egg tournament "$@" --matches "$matches" --seed "$seed" --workers "$WORKERS" \
      --out "$dir"
  fi
}

vs_ismcts() {  # N: ppo - ismcts at N players, seed SEEDS+N (2,000 matches at 4, else 1,000)
  local n=$1 matches=1000
  [ "$n" = 4 ] && matches=2000
  tournament "$OUT/ppo-ismcts-${n}p" $matches $((SEEDS + n)) "$me" ismcts --players "$n"
}

if [ "$what" = all ] || [ "$what" = previous ]; then
  for n in 2 3 4 5 6 7 8; do
    tournament "$OUT/ppo-previous-${n}p" 1000 $((SEEDS + 30 + n)) "$me" "$v4" --players $n
  done
fi
if [ "$what" = all ] || [ "$what" = heuristic ]; then
  for n in 2 3 4 5 6 7 8; do
    tournament "$OUT/ppo-heuristic-${n}p" 500 $((SEEDS + 40 + n)) "$me" heuristic --players $n
  done
fi
if [ "$what" = all ] || [ "$what" = tournaments ]; then
  # played in this order (4 players first; the costly ISMCTS-1000 last); the seeds are fixed
  vs_ismcts 4
  tournament "$OUT/ismcts-net-ppo-4p" 1000 $((SEEDS + 11)) "$net" "$me" --players 4
  tournament "$OUT/ismcts-net-ismcts-4p" 1000 $((SEEDS + 12)) "$net" ismcts --players 4
  for n in 2 3 5 6 7 8; do vs_ismcts $n; done
  tournament "$OUT/ppo-ismcts1000-4p" 1000 $((SEEDS + 10)) "$me" ismcts:iterations=1000 --players 4
fi
if [ "$what" = play ]; then
  for n in ${SIZES:-2 3 4 5 6 7 8}; do vs_ismcts $n; done
fi
if [ "$what" = search-sizes ]; then
  for n in 2 6; do
    tournament "$OUT/ismcts-net-ismcts-${n}p" 1000 $((SEEDS + 50 + n)) "$net" ismcts --players $n
  done
fi
if [ "$what" = search1000 ]; then
  # issue 49's search target: ismcts-net (200 iterations, its default) - ISMCTS-1000 at every
  # size, 300 matches each, seed SEEDS+60+N; each tournament records both agents' time a move
  for n in ${SIZES:-2 3 4 5 6 7 8}; do
    tournament "$OUT/ismcts-net-ismcts1000-${n}p" 300 $((SEEDS + 60 + n)) \
      "ismcts-net:path=$POLICY" ismcts:iterations=1000 --players $n
  done
fi
if [ "$what" = all ] || [ "$what" = tribute ]; then
  for n in 2 3 4 5 6 7 8; do
    deals=20000; [ $n = 4 ] && deals=100000
    dir="$OUT/tribute-${n}p"  # both plays: the agent's own, then the heuristic's
    if [ -f "$dir/summary.json" ]; then
      echo "$dir: done"
    elif [ -f "$dir/tribute_settings.json" ]; then
      dragons-egg tribute-analysis --resume "$dir" --workers "$WORKERS"
    else
      dragons-egg tribute-analysis --tribute "$me" --players $n --deals $((deals / DIV)) \
        --seed $((SEEDS + 20 + n)) --workers "$WORKERS" \
        --policies heuristic,learned,learned-ask,learned-give --out "$dir"
    fi
  done
fi
