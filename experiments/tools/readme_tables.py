"""The README's result tables, generated from the committed results, so they cannot drift.

``python -m dragons_egg.experiments.tools.readme_tables`` rewrites every block of the
documents in :data:`DOCUMENTS` (``README.md``; ``docs/results.md``, the shipped agent's
measures; ``docs/shipped-agents.md``, those of the agents shipped before) between a marker
``<!-- results:KIND:PATHS -->`` and ``<!-- results:end -->`` from the result folders it names
(``PATHS``: comma-separated, relative to the repository root):

- ``tournament:DIR``: the agents table of a tournament (``DIR/summary.json``) and its paired
  differences in mean match score;
- ``sizes:DIR,DIR,...``: one row per tournament of two agents, at its table size: the
  difference between the first and the second agent;
- ``roles:DIR,DIR,...``: one row per tournament of the same two agents, at its table size:
  how often a seat of each finished first (the Dragon) and last (the Egg holder), beside
  the even share, 1 / players;
- ``tribute:DIR,DIR,...``: one row per tribute analysis and play policy
  (``dragons_egg.experiments.evaluation.tribute``):
  the Dragon's round-2 reward under each tribute policy, learned - heuristic, and the
  learned asks alone and give-back alone against the heuristic's;
- ``training:DIR``: the evaluations of a self-play run (``DIR/eval*.csv``).

``--check`` writes nothing and exits with status 1 when a block is stale
(``tests/experiments/tools/test_docs.py`` runs it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The documents with results blocks, relative to the repository root.
DOCUMENTS = ("README.md", "docs/results.md", "docs/shipped-agents.md")
BLOCK = re.compile(r"(<!-- results:(\w+):([^ ]+) -->\n)(.*?)(<!-- results:end -->)", re.S)


def _est(e: dict[str, float], digits: int = 3, sign: bool = False) -> str:
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    return f"{f.format(e['mean'])} [{f.format(e['low'])}, {f.format(e['high'])}]"


def _load(root: Path, d: str, name: str = "summary.json") -> dict[str, Any]:
    path = root / d / name
    try:
        summary: dict[str, Any] = json.loads(path.read_text())  # a results file's JSON object
    except (OSError, ValueError) as exc:
        raise ValueError(f"README block needs {path}: {exc}") from None
    return summary


def tournament_block(root: Path, dirs: list[str]) -> str:
    (d,) = dirs
    s = _load(root, d)
    cfg = _load(root, d, "config.json")
    lines = [f"{s['matches']} matches ({s['sequences']} deal sequences x "
             f"{cfg['num_players']} rotations), {cfg['num_players']} players, "
             f"{cfg['num_rounds']} rounds a match, seed {cfg['seed']}; `{d}/`:", "",
             "| agent | mean place | Dragon rate | Egg rate | mean match score | rating |",
             "|---|---|---|---|---|---|"]
    labels = s["labels"]
    for a in labels:
        m, r = s["agents"][a], s["ratings"][a]
        lines.append(f"| `{a}` | {_est(m['mean_place'], 2)} | {_est(m['dragon_rate'])} | "
                     f"{_est(m['egg_rate'])} | {_est(m['mean_score'])} | "
                     f"{r['mu']:.1f} ± {1.96 * r['sigma']:.1f} |")
    pairs = [f"{a} - {b}" for i, a in enumerate(labels) for b in labels[i + 1:]]
    diffs = [f"{k} {_est(s['differences'][k], sign=True)}" for k in pairs
             if k in s["differences"]]
    lines += ["", "Paired differences in mean match score (95% intervals): "
              + "; ".join(diffs) + "."]
    return "\n".join(lines)


def sizes_block(root: Path, dirs: list[str]) -> str:
    lines = ["| players | matches | agents | difference in mean match score | 95% interval "
             "excludes 0 |", "|---:|---:|---|---|---|"]
    for d in dirs:
        s = _load(root, d)
        cfg = _load(root, d, "config.json")
        a, b = s["labels"][:2]
        e = s["differences"][f"{a} - {b}"]
        lines.append(f"| {cfg['num_players']} | {s['matches']} | `{a}` - `{b}` | "
                     f"{_est(e, sign=True)} | {'yes' if e['low'] > 0 or e['high'] < 0 else 'no'}"
                     f" |")
    return "\n".join(lines)


def roles_block(root: Path, dirs: list[str]) -> str:
    labels: list[str] = []
    rows = []
    for d in dirs:
        s = _load(root, d)
        cfg = _load(root, d, "config.json")
        pair = s["labels"][:2]
        if labels and pair != labels:
            raise ValueError(f"README roles block: {d} plays {pair}, not {labels} as the "
                             f"block's first folder does")
        labels = pair
        m = [s["agents"][a] for a in pair]
        rows.append(f"| {cfg['num_players']} | {1 / cfg['num_players']:.3f} | "
                    + " | ".join(_est(x[k]) for k in ("dragon_rate", "egg_rate") for x in m)
                    + " |")
    a, b = (f"`{x}`" for x in labels)
    return "\n".join([f"| players | even share | Dragon rate: {a} | {b} | Egg rate: {a} | {b} |",
                      "|---:|---:|---|---|---|---|", *rows])


def tribute_block(root: Path, dirs: list[str]) -> str:
    lines = ["| play policy (every seat) | learned tribute | deal sequences | none | random | "
             "heuristic | learned | learned - heuristic | its asks alone | its give-back "
             "alone |", "|---|---|---:|---|---|---|---|---|---|---|"]
    for d in dirs:
        top = _load(root, d)
        # one row per play policy (an analysis before several plays was one play's summary)
        for s in ([{**top, **play} for play in top["plays"]] if "plays" in top else [top]):
            lines.append(_tribute_row(s))
    return "\n".join(lines)


def _tribute_row(s: dict[str, Any]) -> str:
    p = s["policies"]
    vs = s["vs_heuristic"]
    split = [_est(vs[t], sign=True) if t in vs else "-"  # analyses before the split
             for t in ("learned-ask", "learned-give")]
    return (f"| `{s['play']}` | `{s['tribute']}` | {s['deals']} | "
            + " | ".join(_est(p[t]) if t in p else "-"  # --policies left it out
                         for t in ("none", "random", "heuristic", "learned"))
            + f" | **{_est(vs['learned'], sign=True)}** | " + " | ".join(split) + " |")


def training_block(root: Path, dirs: list[str]) -> str:
    from dragons_egg.experiments.common.runs import merged_evals

    (d,) = dirs
    rows = merged_evals(root / d)
    opps = sorted({k[5:] for r in rows for k in r if k.startswith("diff_")
                   and not k.endswith(("_low", "_high"))})
    lines = ["| samples | training s | " + " | ".join(f"- `{o}`" for o in opps) + " |",
             "|---:|---:|" + "---|" * len(opps)]
    for r in rows:
        cells = [_est({"mean": r[f"diff_{o}"], "low": r[f"diff_{o}_low"],
                       "high": r[f"diff_{o}_high"]}, sign=True) if f"diff_{o}" in r else "-"
                 for o in opps]
        lines.append(f"| {r['samples']:,} | {r['seconds']:,.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


RENDERERS: dict[str, Callable[[Path, list[str]], str]] = {
    "tournament": tournament_block, "sizes": sizes_block, "roles": roles_block,
    "tribute": tribute_block,
    "training": training_block}


def render(text: str, root: Path = ROOT) -> str:
    """``text`` with every results block regenerated."""
    def sub(m: re.Match[str]) -> str:
        kind, paths = m.group(2), m.group(3).split(",")
        if kind not in RENDERERS:
            raise ValueError(f"unknown README results block kind {kind!r}")
        return m.group(1) + RENDERERS[kind](root, paths) + "\n" + m.group(5)
    return BLOCK.sub(sub, text)


def _regenerate(path: Path, root: Path, check: bool) -> int:
    """Rewrite (or, with ``check``, compare) the results blocks of one document: 0 when it
    is up to date or rewritten, 1 when ``check`` finds it stale, 2 on an error."""
    if not path.is_file():
        print(f"error: {path} does not exist (the README's tables are generated in a checkout "
              "of the repository; pass --readme)", file=sys.stderr)
        return 2
    text = path.read_text()
    try:
        new = render(text, root)
    except ValueError as exc:  # a block naming a folder without its results, or a bad kind
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 2
    if check:
        if new != text:
            print(f"{path} has stale results tables: run "
                  "python -m dragons_egg.experiments.tools.readme_tables",
                  file=sys.stderr)
            return 1
        return 0
    path.write_text(new)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dragons_egg.experiments.tools.readme_tables",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    p.add_argument("--readme", default=None,
                   help="one document to regenerate, its folders relative to the document's "
                        "own folder (default: every document of DOCUMENTS in the checkout)")
    args = p.parse_args(argv)
    if args.readme is not None:
        path = Path(args.readme)
        return _regenerate(path, path.parent, args.check)
    return max(_regenerate(ROOT / doc, ROOT, args.check) for doc in DOCUMENTS)


if __name__ == "__main__":
    raise SystemExit(main())
