"""Collect the issue-49 lever comparison into results/training-levers/ (run from the repo root
with the project's venv): each arm's training figures and its margin over heuristic at 2 and 6
players, paired against the base arm on the same deals (dragons-egg tournament compare)."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

ARMS = {"base": "the shipped recipe (selfplay-shipped), 10M samples",
        "big512": "hidden 512x512 (--hidden 512 512)",
        "critic": "centralised critic (--central-critic)",
        "belief": "hand-prediction head (--hand-prediction 0.5)",
        "exploiters": "exploiters in the league (8M learner samples + 4 best responses of 0.5M, "
                      "--exploiter-every 2000000 --exploiter-samples 500000 "
                      "--exploiter-players 2 6)",
        "shipped": "the shipped ppo (reference; 6 h of training)"}
root = Path("runs/levers")
out = Path("results/training-levers")
out.mkdir(parents=True, exist_ok=True)
rows = []
for arm, what in ARMS.items():
    row = {"arm": arm, "what": what}
    s = root / arm / "summary.json"
    if s.is_file():
        d = json.loads(s.read_text())
        row.update(samples=d["samples"], seconds=round(d["seconds"], 1),
                   samples_per_s=round(d["samples_per_s"]))
        (out / arm).mkdir(exist_ok=True)
        shutil.copy(root / arm / "config.json", out / arm / "config.json")
        small = {k: d[k] for k in ("samples", "updates", "seconds", "samples_per_s") if k in d}
        (out / arm / "summary.json").write_text(json.dumps(small, indent=1) + "\n")
        rec = root / arm / "exploiters" / "exploiters.json"
        if rec.is_file():
            shutil.copy(rec, out / arm / "exploiters.json")
    for p in (2, 6):
        t = root / "eval" / f"{arm}-{p}p"
        if not (t / "summary.json").is_file():
            continue
        cmp_json = out / f"{arm}-vs-base-{p}p.json"
        if arm != "base":
            subprocess.run([sys.executable, "-m", "dragons_egg.experiments.cli.main", "tournament",
                            "compare", str(t), str(root / "eval" / f"base-{p}p"), "--json",
                            str(cmp_json)], check=True, stdout=subprocess.DEVNULL)
            c = json.loads(cmp_json.read_text())["pairs"][0]
            row[f"margin_{p}p"] = c["a_margin"]
            row[f"vs_base_{p}p"] = c["difference"]
        else:
            base = json.loads((t / "summary.json").read_text())["agents"]
            k = next(a for a in base if a != "heuristic")
            m = base[k]["mean_score"]["mean"] - base["heuristic"]["mean_score"]["mean"]
            row[f"margin_{p}p"] = round(m, 4)
        (out / "tournaments").mkdir(exist_ok=True)
        shutil.copy(t / "summary.json", out / "tournaments" / f"{arm}-{p}p.summary.json")
        shutil.copy(t / "report.md", out / "tournaments" / f"{arm}-{p}p.report.md")
    rows.append(row)
(out / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")


def fmt(d):
    return "" if d is None else f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"


lines = ["| arm | samples | training s | samples/s | margin over heuristic, 2p | - base, 2p "
         "| margin, 6p | - base, 6p |", "|---|---:|---:|---:|---:|---|---:|---|"]
for r in rows:
    lines.append(f"| `{r['arm']}`: {r['what']} | {r.get('samples', '-'):,} | "
                 f"{r.get('seconds', '-')} | {r.get('samples_per_s', '-')} | "
                 f"{r.get('margin_2p', float('nan')):+.3f} | {fmt(r.get('vs_base_2p'))} | "
                 f"{r.get('margin_6p', float('nan')):+.3f} | {fmt(r.get('vs_base_6p'))} |"
                 if "samples" in r else
                 f"| `{r['arm']}`: {r['what']} | - | - | - | {r.get('margin_2p', float('nan')):+.3f}"
                 f" | {fmt(r.get('vs_base_2p'))} | {r.get('margin_6p', float('nan')):+.3f} | "
                 f"{fmt(r.get('vs_base_6p'))} |")
(out / "table.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(7, 3.8))
arms = [r for r in rows if r["arm"] != "base" and "vs_base_2p" in r]
for k, p in enumerate((2, 6)):
    xs = [i + (k - 0.5) * 0.3 for i in range(len(arms))]
    ds = [r.get(f"vs_base_{p}p") for r in arms]
    ys = [d["mean"] if d else 0 for d in ds]
    err = [[(d["mean"] - d["low"]) if d else 0 for d in ds],
           [(d["high"] - d["mean"]) if d else 0 for d in ds]]
    ax.errorbar(xs, ys, yerr=err, fmt="o", capsize=3, label=f"{p} players")
ax.axhline(0, color="grey", lw=0.8)
ax.set_xticks(range(len(arms)), [r["arm"] for r in arms])
ax.set_ylabel("margin over heuristic minus base's")
ax.set_title("Levers against the shipped recipe, equal samples (paired, 95%)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out / "levers.png", dpi=100)
