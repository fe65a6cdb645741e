"""Counterfactual tribute learning: every tribute choice played out on the same deal, and the
policy's tribute logits fitted to what each choice earned.

Tribute decisions (R30..R34) are a few per match, and their effect on the round is small next to
everything played after them, so PPO's advantage for one ask is mostly noise. This trainer
measures it instead, on duplicate deals:

1. **States.** Batched matches on the compiled engine (:class:`dragons_egg_env.vector.
   VectorEngine`, every table size of ``table_sizes``, observations padded to the policy's
   ``max_players``) are played until the Dragon decides in the tribute; that state is kept.
   The Dragon's choices while states are gathered are the heuristic's (H8/H9) or, with
   probability ``explore``, a uniform legal one, so asks after a hit, after a miss and after
   any first ask are all seen.
2. **Counterfactual values.** Each kept state is copied once per legal action (with
   ``per_class``, the default: once per class of
   :func:`~dragons_egg.experiments.training.counterfactual.action_classes`, one card of each
   number, one dragon card and the pass, whose value counts for its whole class, as suits
   cannot change the game, R7); every copy plays its action and then the rest of the round,
   all copies in one batch: the Dragon's later tribute choices by the heuristic, all play by
   one *play policy* (``self``: the policy being fitted, greedy; ``heuristic``: the rule
   agent; a share ``heuristic_share`` of the states each). Play is deterministic, so
   ``Q(s, a)``, the Dragon's round reward (R27) after ``a``, is exact for that deal; its mean
   over deals is the value of ``a`` in what the Dragon knows.
3. **Fit.** The policy's shared layers stay as they are, and so do the rows of its action layer
   that belong to play (``PASS`` included: it is shared with play). Each tribute column's logit
   becomes a small linear model (:func:`features`): a bias per column, a weight per tribute
   context (first ask, ask after misses, ask after a hit, give-back), card group (a number, or
   the dragon cards) and count of that group in the own hand (one-hot, so "ask for the number I
   hold once after a hit" and "give back a card I hold alone" can be told apart; written into
   the policy file as the head ``tribute``'s ``pi_counts``,
   :func:`dragons_egg.agents.heads.tribute_features`), and
   a weight per phase on the old logit. It is fitted by ridge regression to ``scale * (Q(s, a) -
   Q(s, pass))`` in the ask phase (the model being the logit minus the pass logit) and to
   ``scale * (Q(s, a) - mean Q(s, .))`` in the give phase, over every legal action of every
   state. Play logits do not change at all: the new policy plays exactly as the old one. Greedy
   in ``Q`` of the heuristic's continuation is one step of policy improvement over the
   heuristic's tribute (Bertsekas' rollout), as far as the model can represent it (what else
   was tried, and what each fit measured: ``docs/training.md``).

A share ``holdout`` of the states is kept out of the fit and scores it: the mean ``Q`` of the
fitted policy's choice, of the heuristic's, of the old policy's, of the best choice (an oracle
that sees the deal) and of a uniform one, per phase and play policy, and per table size
(``summary.json``, ``report.md``). The run stops before its time budget (``max_seconds``
counts the base policy's training seconds too, read from its provenance, and the time the fit
will take is kept back, :func:`fit_reserve`) or after ``chunks`` batches of states; with a
number of chunks (and the same workers) it is reproducible bit for bit.

Each batch is saved as it is gathered (``OUT/gather/``, :func:`save_batch`): a stopped fit
continues with ``--resume OUT`` (its saved settings and the rest of its budget; with
``chunks``, exactly the uninterrupted fit).

``python -m dragons_egg.experiments.research.tribute.fit --policy runs/ppo-shipped/final.npz --out
runs/tribute-fit [--max-seconds 10800] [--chunks N] [--workers 2]``, then if stopped
``... --resume runs/tribute-fit``

The parts, each a module beside this one (their public names are importable from here too):
:mod:`.settings` (:class:`TributeFitConfig`), :mod:`.gather` (steps 1 and 2, in worker
processes, within the budget), :mod:`.data` (the states and values as arrays and files),
:mod:`.model` (step 3 and the held-out scores) and :mod:`.report` (the card values and
``report.md``); this module runs the fit (:func:`fit`) and its command line (:func:`main`).
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.files import write_atomically
from dragons_egg.experiments.common.runs import (
    claim_output,
    listing,
    run_files,
    stops_on_sigterm,
)
from dragons_egg.experiments.common.settings import module_prog, parse_config_cli, validated
from dragons_egg_env.extras import require_cli

from .data import (
    GATHER,
    NOT_IN_STATES,
    concat_chunks,
    file_digest,
    load_batches,
    load_data,
    save_batch,
    save_data,
)
from .gather import (
    FIT_RESERVE,
    FIT_SECONDS_PER_STATE,
    chunk_tasks,
    counterfactual_values,
    fit_reserve,
    gather,
    gather_states,
    run_chunk,
)
from .model import (
    NCOL,
    NPARAM,
    choice_values,
    design,
    evaluate,
    features,
    fitted_policy,
    interval,
    score,
    solve,
)
from .report import card_values, plot_card_values, report
from .settings import PHASES, PLAY_POLICIES, TributeFitConfig, config_from_dict, jsonable

#: What a finished fit writes in its folder (and ``data.npz``, unless it read ``--data``).
OUTPUTS = ("policy.npz", "policy.json", "summary.json", "report.md", "card_values.png")


def fit(cfg: TributeFitConfig, data: str | None = None, resume: bool = False) -> Path:
    """Gather (or read ``data``), fit, score on the held-out batches and write the policy,
    ``summary.json`` and ``report.md`` to ``cfg.out``. Returns the policy file. Each batch is
    on disk as it is gathered (``gather/``); ``resume`` continues the gather (or the fit) that
    stopped in ``cfg.out`` (whose settings :func:`resume_settings` reads) instead of starting
    one."""
    from dragons_egg.agents.netpolicy import load_policy_file

    cfg.validate()
    t0 = time.perf_counter()
    policy = load_policy_file(cfg.policy)
    if policy.pi_counts is not None:
        raise ValueError(f"{cfg.policy} is already tribute-fitted; fit the policy it came from")
    prov = dict(policy.meta.get("provenance", {}))
    base_seconds = float(prov.get("seconds", 0.0))
    folder = Path(cfg.out) / GATHER
    if resume:
        out = Path(cfg.out)
        if data is not None:
            raise ValueError("--data and --resume: a resumed fit reads what its folder holds")
        if run_files(out, OUTPUTS):
            raise ValueError(f"the tribute fit in {out} is finished "
                             f"({listing(run_files(out, OUTPUTS))}); nothing to resume")
        if (out / "data.npz").is_file():
            data = str(out / "data.npz")  # the gather finished, the fit did not
    else:
        # before any work: a folder that cannot be written, or holds an earlier fit (its
        # data.npz may be the --data this fit reads) or a stopped one
        if folder.is_dir() and not cfg.overwrite:
            n = len(list(folder.glob("batch_*.npz")))
            raise ValueError(f"{cfg.out} holds a tribute fit that stopped after {n} batch(es): "
                             f"continue it with --resume {shlex.quote(str(cfg.out))}, or give "
                             "another folder, or --overwrite to start again")
        out = claim_output(cfg.out, (*OUTPUTS, *(() if data else ("data.npz",))),
                           overwrite=cfg.overwrite, what="tribute fit")
        if folder.is_dir():
            shutil.rmtree(folder)  # --overwrite: never mix two gathers
    if data is None:
        allowed = cfg.max_seconds - base_seconds if cfg.max_seconds > 0 else float("inf")
        if allowed <= 0:
            raise ValueError(f"the base policy already trained {base_seconds:,.1f} s, the "
                             f"whole budget of max_seconds={cfg.max_seconds:,.0f}")
        done, spent = load_batches(folder, cfg) if resume else ([], 0.0)
        if not resume:
            folder.mkdir()
            write_atomically(folder / "settings.json", json.dumps(
                {"config": jsonable(cfg), "command": cfg.command,
                 "policy_sha256": file_digest(cfg.policy)}, indent=1))
        chunks, gather_seconds = gather(
            cfg, allowed, done, spent,
            keep=lambda k, batch, secs: save_batch(folder, k, batch, secs, cfg))
        save_data(out / "data.npz", chunks, gather_seconds, cfg)
        shutil.rmtree(folder)  # data.npz holds every batch now
    else:
        if resume:
            shutil.rmtree(folder, ignore_errors=True)  # left by a stop after data.npz
        chunks, meta = load_data(data)
        if meta.get("policy_sha256") != file_digest(cfg.policy):
            raise ValueError(f"tribute-fit data {data} was gathered with another policy than "
                             f"{cfg.policy} (its values come from that policy's play)")
        gather_seconds = float(meta["seconds"])
    if len(chunks) < (2 if cfg.holdout > 0 else 1):
        raise ValueError(f"only {len(chunks)} batch(es) of states: too few to fit and score")
    t_fit = time.perf_counter()
    cut = len(chunks) if cfg.holdout == 0 else \
        min(len(chunks) - 1, max(1, round(len(chunks) * (1 - cfg.holdout))))
    train, held = chunks[:cut], chunks[cut:]
    d = concat_chunks(train)
    theta = solve(d["obs"], d["mask"], d["q"], policy.logits(d["obs"], d["mask"]), cfg.scale,
                  cfg.ridge, policy.max_players)
    seconds = gather_seconds + (time.perf_counter() - t_fit)
    total = base_seconds + seconds
    info: dict[str, Any] = {  # summary.json, and the policy's provenance
        "config": jsonable(cfg), "base_policy": str(cfg.policy),
        "base_seconds": base_seconds, "seconds": round(seconds, 1),
        "states": int(len(d["q"])), "held_out_states": int(sum(len(c["q"]) for c in held)),
        "alpha": [float(theta[-2]), float(theta[-1])]}
    new_prov = {**prov, "seconds": round(total, 1), "tribute_fit": info}
    if cfg.command:
        new_prov["command"] = cfg.command
    new = fitted_policy(policy, theta, {**policy.meta, "provenance": new_prov})
    info["held_out"] = evaluate(policy, new, held)
    values = card_values(chunks)
    info["card_values"] = values  # info is new_prov's: the file carries it too
    plot_card_values(values, out / "card_values.png")
    new.meta["provenance"]["tribute_fit"] = info
    path = new.save(out / "policy.npz")
    path.with_suffix(".json").write_text(json.dumps(new_prov, indent=1) + "\n")
    (out / "summary.json").write_text(json.dumps(info, indent=1) + "\n")
    (out / "report.md").write_text(report(info))
    print(f"wrote {path}: {info['states']:,} states, {seconds:,.0f} s "
          f"(with the base policy {total:,.0f} s); {time.perf_counter() - t0:,.0f} s in all",
          file=sys.stderr)
    return path


# ---------------------------------------------------------------------------------------
# The command line.

#: Settings a resumed fit may take from the command line: they do not change its results.
RESUME_MAY_CHANGE = ("workers", "progress")


def parse_args(argv: list[str] | None = None, prog: str | None = None
               ) -> tuple[TributeFitConfig, str | None, bool]:
    """The config from ``--config FILE`` (JSON) and flags, ``--data``, and whether it is
    ``--resume DIR`` (then the config is the one saved in DIR, :func:`resume_settings`);
    ``--help`` and errors name ``prog`` (default ``python -m`` this module)."""
    parsed = parse_config_cli(
        TributeFitConfig, argv, config_from_dict, "--data",
        "Counterfactual tribute fit of a policy file.", prog=prog or module_prog(parse_args),
        extra_help="refit the states gathered before (data.npz of an earlier fit) instead of "
        "gathering", extra_metavar="DATA.npz",
        options=(("--resume", "continue the fit that stopped in DIR, with its saved settings "
                  f"(only {', '.join(RESUME_MAY_CHANGE)} may be given)", "DIR"),))
    resume = parsed.options["--resume"]
    if resume is None:
        return validated(parsed.settings), parsed.extra, False
    return resume_settings(resume, parsed.settings, parsed.given), parsed.extra, True


def resume_settings(folder: str, parsed: TributeFitConfig, given: frozenset[str]
                    ) -> TributeFitConfig:
    """The settings of the fit that stopped in ``folder`` (``gather/settings.json``, or a
    finished gather's ``data.npz``), with those of :data:`RESUME_MAY_CHANGE` that ``given``
    names taken from ``parsed``; a ``ValueError`` when ``folder`` holds no such fit or another
    setting is given with a different value."""
    out = Path(folder)
    try:
        if (out / GATHER / "settings.json").is_file():
            saved = json.loads((out / GATHER / "settings.json").read_text())
            config, command = saved["config"], saved.get("command", "")
        elif (out / "data.npz").is_file():
            meta = load_data(out / "data.npz")[1]
            config, command = meta["config"], meta.get("command", "")
        else:
            raise ValueError(f"{folder} holds no stopped tribute fit to resume (no "
                             f"{GATHER}/settings.json or data.npz)")
        cfg = config_from_dict({**config, "out": str(out), "command": command})
    except (OSError, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{out / GATHER / 'settings.json'} is not a tribute fit's settings: "
                         f"{exc}") from None
    changed = [f"--{name.replace('_', '-')} {getattr(parsed, name)!r} (saved: "
               f"{getattr(cfg, name)!r})" for name in sorted(given - set(RESUME_MAY_CHANGE))
               if name != "out" and getattr(parsed, name) != getattr(cfg, name)]
    if "out" in given and Path(parsed.out) != out:
        changed.append(f"--out {parsed.out} (the fit resumed is in {folder})")
    if changed:
        raise ValueError(f"cannot resume {folder} with other settings: {'; '.join(changed)}; "
                         "omit them to resume with the saved ones")
    for name in RESUME_MAY_CHANGE:
        if name in given:
            setattr(cfg, name, getattr(parsed, name))
    cfg.validate()
    return cfg


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    prog = prog or "python -m dragons_egg.experiments.research.tribute.fit"
    # before parsing: tyro parses (train), the batched engine gathers (vector), tqdm and plots
    require_cli(prog, "train")
    try:
        cfg, data, resume = parse_args(argv, prog)
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if not cfg.command:
        cfg.command = f"{prog} " + " ".join(
            sys.argv[1:] if argv is None else argv)
    try:
        fit(cfg, data, resume)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        saved = len(list((Path(cfg.out) / GATHER).glob("batch_*.npz")))
        print(f"{prog}: interrupted; {saved} batch(es) of states are saved in "
              f"{Path(cfg.out) / GATHER}; resume with: {prog} --resume "
              f"{shlex.quote(str(cfg.out))}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["TributeFitConfig", "fit", "gather", "gather_states", "counterfactual_values",
           "features", "design", "solve", "fitted_policy", "evaluate", "load_data",
           "concat_chunks", "interval", "save_batch", "load_batches", "resume_settings",
           "main",
           # the rest of what this module held before its parts moved to the modules beside it
           "PLAY_POLICIES", "PHASES", "config_from_dict", "run_chunk",
           "chunk_tasks", "fit_reserve", "FIT_RESERVE", "FIT_SECONDS_PER_STATE", "NCOL",
           "NPARAM", "choice_values", "score", "save_data", "file_digest", "NOT_IN_STATES",
           "GATHER", "OUTPUTS", "card_values", "plot_card_values", "report",
           "RESUME_MAY_CHANGE", "parse_args"]
