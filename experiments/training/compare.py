"""Training paths and settings compared at equal compute: how strong each gets against the
heuristic from the same training budget.

``python -m dragons_egg.experiments.training.compare [--seconds 300] [--matches 400] [--variants
A,B,...] [--out results/selfplay-compare]``

Each variant trains from a fresh start (seed 0) for ``--seconds`` of process CPU time, after a
warm-up that compiles the batched engine's kernels and builds the networks, collection and
updates included. CPU time of the one-thread process, not wall time, is the budget, so that a
job on the machine's other core does not skew the comparison; on an idle core the two are
equal (both are printed). Then the trained policy plays ``--matches`` duplicate matches at 4
players in one seat against three ``heuristic`` players, the same deals for every variant, and
its mean match score difference to the heuristic is reported with a 95% bootstrap interval.

The variants (``VARIANTS``): the self-play trainer (``dragons_egg.experiments.training.selfplay``)
with its
defaults and with one setting changed each (epochs, network size, tribute weight, league,
league with the heuristic and greedy agents as members),
and the two Stable-Baselines3 paths, sb3-contrib's MaskablePPO on the batched engine
(``dragons_egg.experiments.training.sb3_vec.SB3VectorEnv``) and
``dragons_egg.experiments.training.train_ppo``
(``SingleAgentEnv``),
each a single learner seat against heuristic, greedy and random opponents. Writes
``compare.json``, ``compare.md`` and ``compare.png`` to ``--out``, the trained models to
``--out``'s ``models/`` (not kept in git).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.args import int_range, positive_float
from dragons_egg.experiments.common.plots import save_png
from dragons_egg.experiments.common.runs import stops_on_sigterm
from dragons_egg_env.extras import require_cli

#: Self-play settings changed from the defaults, per variant.
SELFPLAY_VARIANTS: dict[str, dict[str, Any]] = {
    "selfplay": {},
    "selfplay-epochs4": {"epochs": 4},
    "selfplay-512x512": {"hidden": (512, 512)},
    "selfplay-tribute4": {"tribute_weight": 4.0},
    "selfplay-league": {"opponent_share": 0.2, "snapshot_every": 500_000},
    "selfplay-league-agents": {"opponent_share": 0.25, "snapshot_every": 500_000,
                               "league_agents": ("heuristic", "greedy")},
}
#: The Stable-Baselines3 variants (MaskablePPO, one learner seat).
SB3_VARIANTS = ("sb3-vector", "sb3-train_ppo")
VARIANTS = (*SELFPLAY_VARIANTS, *SB3_VARIANTS)
DEFAULT_OUT = "results/selfplay-compare"


class Budget:
    """Process CPU seconds since :meth:`start`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.cpu0 = self.wall0 = 0.0

    def start(self) -> None:
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()

    def left(self) -> bool:
        return time.process_time() - self.cpu0 < self.seconds

    def used(self) -> dict[str, float]:
        return {"cpu_seconds": time.process_time() - self.cpu0,
                "wall_seconds": time.perf_counter() - self.wall0}


def train_selfplay(name: str, budget: Budget, out: Path) -> tuple[str, dict[str, Any]]:
    """Train the self-play variant ``name``; return its agent spec and figures."""
    from dragons_egg.experiments.training.network import export_policy
    from dragons_egg.experiments.training.selfplay import Run, SelfPlayConfig

    # in this process: the comparison counts this process's CPU seconds, which Ray collectors'
    # would not be in
    cfg = SelfPlayConfig.from_dict(dict(  # flat: the groups' settings by name
        total_samples=10**12, eval_every=0, eval_opponents=(), checkpoint_every=0,
        out_dir=str(out), run_name=name, progress=False, collectors=0,
        **SELFPLAY_VARIANTS[name]))
    run = Run(cfg, overwrite=True)  # a scratch run: a rerun replaces it
    run.iteration()  # warm-up
    start = run.samples
    budget.start()
    while budget.left():
        run.iteration()
        run.periodic()  # league snapshots, where the variant has them
    fig = {"samples": run.samples - start, **budget.used()}
    path = export_policy(run.learner.model, cfg, out / f"{name}.npz",
                         {"trainer": "dragons_egg.experiments.training.compare", "variant": name},
                         run.learner.table)
    return f"net:path={path}", fig


def _sb3_model(venv: Any, seed: int, **kwargs: Any) -> Any:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import Logger

    model = MaskablePPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0, **kwargs)
    model.set_logger(Logger(None, []))  # no output: not even SB3's empty /tmp/SB3-<time> folder
    return model


def _learn_for(model: Any, budget: Budget, warmup: int) -> dict[str, Any]:
    from stable_baselines3.common.callbacks import BaseCallback

    class Stop(BaseCallback):
        def _on_step(self) -> bool:
            return budget.left()

    model.learn(warmup)
    before = model.num_timesteps
    budget.start()
    model.learn(10**12, callback=Stop(), reset_num_timesteps=False)
    return {"samples": model.num_timesteps - before, **budget.used()}


def train_sb3_vector(budget: Budget, out: Path) -> tuple[str, dict[str, Any]]:
    """MaskablePPO on :class:`dragons_egg.experiments.training.sb3_vec.SB3VectorEnv` (64 matches, 4
    players)."""
    from dragons_egg.agents.batched import AgentPolicy
    from dragons_egg.experiments.training.sb3_vec import SB3VectorEnv

    vec = SB3VectorEnv(num_envs=64, opponents=[AgentPolicy(s) for s in
                                               ("heuristic", "greedy", "random")], seed=0)
    model = _sb3_model(vec, 0, n_steps=64, batch_size=1024, n_epochs=5, gamma=0.995,
                       policy_kwargs={"net_arch": [256, 256]})
    fig = _learn_for(model, budget, 64 * 64)
    path = out / "sb3-vector.zip"
    model.save(path)
    vec.close()
    return f"ppo:path={path},trust=1", fig  # the SB3 zip this process saved


def train_sb3_train_ppo(budget: Budget, out: Path) -> tuple[str, dict[str, Any]]:
    """``dragons_egg.experiments.training.train_ppo``'s environment and MaskablePPO settings (its
    defaults)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from dragons_egg.experiments.training.train_ppo import TrainConfig, make_env_fn

    cfg = TrainConfig(out_dir=str(out), run_name="sb3-train_ppo", progress=False)
    venv = DummyVecEnv([make_env_fn(cfg, i) for i in range(cfg.n_envs)])
    model = _sb3_model(venv, cfg.seed, learning_rate=cfg.learning_rate, n_steps=cfg.n_steps,
                       batch_size=cfg.batch_size, n_epochs=cfg.n_epochs, gamma=cfg.gamma,
                       policy_kwargs={"net_arch": list(cfg.net_arch)})
    fig = _learn_for(model, budget, cfg.n_steps * cfg.n_envs)
    path = out / "sb3-train_ppo.zip"
    model.save(path)
    venv.close()
    return f"ppo:path={path},trust=1", fig  # the SB3 zip this process saved


def run_variant(name: str, seconds: float, out: Path) -> tuple[str, dict[str, Any]]:
    """Train one variant for ``seconds`` of CPU time; its agent spec and figures."""
    import torch

    torch.set_num_threads(1)
    budget = Budget(seconds)
    trainers: dict[str, Callable[[Budget, Path], tuple[str, dict[str, Any]]]] = {
        "sb3-vector": train_sb3_vector, "sb3-train_ppo": train_sb3_train_ppo}
    if name in SELFPLAY_VARIANTS:
        return train_selfplay(name, budget, out)
    return trainers[name](budget, out)


def evaluate(spec: str, matches: int, seed: int) -> dict[str, Any]:
    from dragons_egg.experiments.evaluation.versus import evaluate_agent

    return evaluate_agent(spec, ["heuristic"], players=4, matches=matches, seed=seed)


def write_report(rows: list[dict[str, Any]], args: argparse.Namespace, out: Path,
                 planned: list[str] | None = None) -> None:
    """``compare.json`` (the settings, the ``planned`` variants and the rows of those done, in
    the order played), then, once a variant is done, ``compare.md`` and ``compare.png``."""
    from dragons_egg.experiments.common.files import write_atomically
    from dragons_egg.experiments.common.runs import json_ready

    write_atomically(out / "compare.json", json.dumps(json_ready(  # no interval (too few): null
        {"seconds": args.seconds, "matches": args.matches, "seed": args.seed,
         "command": getattr(args, "command", ""),
         "planned": planned or [r["variant"] for r in rows], "variants": rows}), indent=1))
    if not rows:  # the plan alone, before the first variant: what --resume reads
        return
    lines = [f"Training budget {args.seconds:g} CPU s per variant; {args.matches} duplicate "
             "matches at 4 players against three `heuristic` players.", "",
             "| variant | samples | samples/CPU s | wall s | diff to heuristic | 95% interval |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lo, hi = r["diff_heuristic_low"], r["diff_heuristic_high"]
        ci = f"[{lo:+.3f}, {hi:+.3f}]" if lo == lo and hi == hi else "too few deal sequences"
        lines.append(f"| {r['variant']} | {r['samples']:,} | "
                     f"{r['samples'] / r['cpu_seconds']:,.0f} | {r['wall_seconds']:,.0f} | "
                     f"{r['diff_heuristic']:+.3f} | {ci} |")
    (out / "compare.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.5))
    ys = range(len(rows))
    d = [r["diff_heuristic"] for r in rows]
    err = [[x - r["diff_heuristic_low"] for x, r in zip(d, rows, strict=True)],
           [r["diff_heuristic_high"] - x for x, r in zip(d, rows, strict=True)]]
    ax.errorbar(d, list(ys), xerr=err, fmt="o", capsize=3)
    ax.set_yticks(list(ys), [r["variant"] for r in rows])
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlabel("mean match score difference to the heuristic (95% interval)")
    ax.set_title(f"strength after {args.seconds:g} CPU s of training")
    fig.tight_layout()
    save_png(fig, out / "compare.png")
    plt.close(fig)


def _resumed(args: argparse.Namespace, p: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """``--resume DIR``: the settings and the finished variants of the comparison in DIR
    (``compare.json``) put into ``args``; the variants done are returned."""
    given = [f"--{k}" for k in ("seconds", "matches", "seed", "variants", "out")
             if getattr(args, k) is not None] + ["--overwrite"] * args.overwrite
    if given:
        p.error(f"--resume takes the comparison's settings from {args.resume}/compare.json; "
                f"drop {', '.join(given)}")
    path = Path(args.resume) / "compare.json"
    try:
        saved = json.loads(path.read_text())
        args.seconds, args.matches, args.seed = saved["seconds"], saved["matches"], saved["seed"]
        # null in the JSON: an interval from too few deal sequences
        rows = [{k: math.nan if v is None else v for k, v in r.items()}
                for r in saved["variants"]]
        done = {r["variant"] for r in rows}
        planned = saved.get("planned", [r["variant"] for r in rows])
        args.variants = ",".join(planned)
        args.command = saved.get("command", "")
    except FileNotFoundError:
        p.error(f"{args.resume} holds no comparison to resume (no compare.json)")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        p.error(f"{path} is not a comparison's report: {exc!r}")
    if done >= set(planned):
        p.error(f"the comparison in {args.resume} is finished; nothing to resume")
    args.out = args.resume
    return rows


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog or "python -m dragons_egg.experiments.training.compare",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=positive_float, default=None,
                   help="CPU seconds of training per variant (default 300)")
    p.add_argument("--matches", type=int_range(1), default=None,
                   help="duplicate evaluation matches per variant (default 400)")
    p.add_argument("--seed", type=int_range(0), default=None,
                   help="seed of the evaluation deals (default 0)")
    p.add_argument("--variants", default=None,
                   help=f"comma-separated subset of {', '.join(VARIANTS)} (default all)")
    p.add_argument("--out", default=None,
                   help="output folder (default results/selfplay-compare); one that holds a "
                   "comparison is refused unless --overwrite (or --resume)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the comparison the --out folder holds (its report and models)")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="play the variants a stopped comparison in DIR has left, with its "
                   "saved settings")
    args = p.parse_args(argv)
    require_cli(p.prog, "train")
    from dragons_egg.experiments.common.runs import claim_output
    from dragons_egg.experiments.evaluation.versus import format_estimate

    args.command = " ".join([p.prog, *map(shlex.quote, sys.argv[1:] if argv is None else argv)])

    rows = _resumed(args, p) if args.resume is not None else []
    for name, default in (("seconds", 300.0), ("matches", 400), ("seed", 0),
                          ("variants", ",".join(VARIANTS)), ("out", DEFAULT_OUT)):
        if getattr(args, name) is None:
            setattr(args, name, default)
    names = [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names:
        p.error(f"unknown variant(s) {', '.join(unknown) or '(none given)'}; "
                f"choose from {', '.join(VARIANTS)}")
    try:
        out = claim_output(args.out, () if args.resume else ("compare.*", "models"),
                           overwrite=args.overwrite, what="comparison")
        (out / "models").mkdir(exist_ok=True)
    except (ValueError, OSError) as exc:
        p.error(f"--out: {exc}")
    done = {r["variant"] for r in rows}
    if args.resume is None:
        write_report(rows, args, out, names)
    try:
        for k, name in enumerate(names, 1):
            if name in done:
                continue
            print(f"[{k}/{len(names)}] {name}: training for {args.seconds:g} CPU s ...",
                  file=sys.stderr, flush=True)
            spec, fig = run_variant(name, args.seconds, out / "models")
            ev = evaluate(spec, args.matches, args.seed)
            row = {"variant": name, **fig, **ev}
            rows.append(row)
            print(f"[{k}/{len(names)}] {name}: {fig['samples']:,} samples, "
                  f"{fig['samples'] / fig['cpu_seconds']:,.0f}/CPU s; diff to heuristic "
                  f"{format_estimate(ev, 'diff_heuristic')}", file=sys.stderr, flush=True)
            write_report(rows, args, out, names)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM: the variants done are in the report
        print(f"{p.prog}: interrupted; {len(rows)} of {len(names)} variants are in "
              f"{out / 'compare.json'}; resume with: {p.prog} --resume "
              f"{shlex.quote(str(out))}", file=sys.stderr, flush=True)
        return 130
    print((out / "compare.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
