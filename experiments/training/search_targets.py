"""Search targets: what ``ismcts-net`` plays where the policy alone would play, kept as data.

``dragons-egg search-targets --policy FILE.npz --players 2 --seconds 3600 --out DIR``

Matches at the given table sizes are played by ``ismcts-net`` guided by ``--policy`` at every
seat (``--iterations`` per move, ``--c``). At each decision with a choice the command keeps
what the policy network reads (the observation, padded to the policy's table size as the
trainer pads it, and the action mask), the search's root visit distribution (the target an
expert-iteration learner fits, AlphaZero-style), the move the search played and the move the
network would have played alone (its most likely action). So a folder answers two
questions: where the search disagrees with the network, and by how much (``summary.json``:
per table size, the share of decisions where the two moves differ); and what a policy
trained towards the search would be fitted to (:func:`load_targets`).

Durable as the project's other long commands:

- Batches of ``--matches-per-batch`` matches are handed to ``--workers`` processes; batch
  ``k`` plays table size ``players[k % len(players)]`` on seeds drawn from ``--seed`` and
  ``k`` alone, so the data do not depend on the number of workers.
- Each batch is written as it finishes (``batch_NNNNN.npz``, atomically, in order), with the
  SHA-256 of the policy file it was searched with; ``settings.json`` first.
- ``--seconds`` bounds the gathering (no batch starts that the pace says would end past it),
  ``--batches`` the count; Ctrl-C or SIGTERM keeps every finished batch and prints the line
  that resumes (``--resume DIR``: the saved settings, the seconds already spent counted).
- An ``--out`` that holds a folder's files is refused (``--resume`` continues it); a batch
  that is damaged, or was searched with another policy file, is refused by name.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dragons_egg.experiments.common.args import int_range, positive_float
from dragons_egg.experiments.common.files import atomic_path, write_atomically
from dragons_egg.experiments.common.runs import (
    claim_output,
    ignore_interrupts,
    stops_on_sigterm,
)
from dragons_egg.experiments.common.settings import (
    SettingsGroup,
    check_range,
    require,
)
from dragons_egg.experiments.training.callbacks import TrainerCallback
from dragons_egg.experiments.training.hooks import UpdateHook
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.extras import require_cli
from dragons_egg_env.observation import layout

if TYPE_CHECKING:
    from multiprocessing.pool import AsyncResult


#: What a search-targets folder holds (an --out with any of them holds one).
FOLDER_FILES = ("settings.json", "batch_*.npz", "summary.json")


@dataclass(frozen=True)
class SearchTargetSettings(SettingsGroup):
    """The plug-in ``search`` of the self-play trainer: expert iteration on a search-targets
    folder (docs/training.md, "Search targets")."""

    #: A search-targets folder (``dragons-egg search-targets``): every minibatch also fits
    #: the policy to ``ismcts-net``'s root visit distributions on ``search_batch`` of the
    #: folder's decisions, drawn at random (cross-entropy, weight ``search_coef``): the
    #: network pulled towards the moves its search finds. Empty: none, the plug-in is off.
    search_targets: str = ""
    #: Loss weight of the search targets' cross-entropy.
    search_coef: float = 1.0
    #: Search-target decisions fitted with each minibatch.
    search_batch: int = 1024

    def check(self) -> None:
        super().check()
        check_range(self.search_coef >= 0, "search_coef", self.search_coef, ">= 0")
        check_range(self.search_batch >= 1, "search_batch", self.search_batch, ">= 1")

    def callback(self) -> SearchTargetsPlugin:
        """The plug-in's hooks on the run (:class:`SearchTargetsPlugin`)."""
        return SearchTargetsPlugin(self)

    def update_hook(self) -> SearchTargetLoss:
        """The plug-in's update hook (:class:`SearchTargetLoss`), empty until the run
        starts and loads the folder."""
        return SearchTargetLoss(self)

    def check_folder(self) -> None:
        """A ``ValueError`` unless ``search_targets`` is empty or a search-targets folder
        (checked before a run starts, not when the settings are read: a finished run's
        settings stay readable where the folder has gone)."""
        require(not self.search_targets or
                (Path(self.search_targets) / "settings.json").is_file(),
                f"search_targets {self.search_targets!r} is not a search-targets folder (no "
                "settings.json): make one with dragons-egg search-targets")
#: The arrays of a batch file.
BATCH_KEYS = ("obs", "mask", "target", "players", "played", "net_move", "meta")
#: Seeds: batch ``k`` of a folder seeded ``s`` plays its matches from ``s * STRIDE + k``.
STRIDE = 1_000_003


#: Every this many-th cycle of the folder's table sizes (one batch of each size in its
#: ``players`` list, in turn) is held out of the fit, for the evaluations' ``search_ce`` and
#: ``search_agree`` (:meth:`SearchTargetLoss.search_figures`).
HELD_OUT = 20


class SearchTargetLoss(UpdateHook):
    """The update hook of the search targets: once :meth:`load_folder` has loaded a folder,
    every minibatch also fits ``search_batch`` of its decisions, drawn at random, with the
    cross-entropy of the policy against the search's visit distributions (weight
    ``search_coef``; the update's figure ``search_loss``)."""

    loss_name = "search_loss"

    def __init__(self, settings: SearchTargetSettings) -> None:
        self.settings = settings
        self.coef = settings.search_coef
        #: The search targets every minibatch fits (obs, mask and target tensors), else
        #: None.
        self.search: dict[str, Any] | None = None
        #: The held-out search targets the evaluations measure (:meth:`search_figures`).
        self.search_held: dict[str, Any] | None = None

    def load_folder(self, learner: Any, folder: str) -> dict[str, Any]:
        """Load a search-targets folder (every batch checked: :func:`load_targets`) for the
        updates to fit; returns what it holds (decisions, table sizes, the policy file's
        SHA-256 and the gathering seconds), for the run's provenance. A ``ValueError`` when
        its observations are not the learner's network's (another ``max_players``)."""
        data, settings = load_targets(folder)
        max_players = learner.cfg.max_players
        width = layout(max_players).size
        if data["obs"].shape[1] != width or data["mask"].shape[1] != NUM_ACTIONS:
            raise ValueError(f"search_targets {folder}: its observations have "
                             f"{data['obs'].shape[1]} values, this network reads {width} "
                             f"(max_players {max_players})")
        torch = learner.torch
        # every HELD_OUT-th cycle of table sizes (whole matches on deals of their own, every
        # size in its share) is not fitted: the evaluations measure on it how far the policy
        # has come towards the search
        cycle = data["batch"] // len(settings["players"])
        held = cycle % HELD_OUT == HELD_OUT - 1

        def tensors(rows: np.ndarray) -> dict[str, Any]:
            return {"obs": torch.from_numpy(data["obs"][rows].astype(np.float32)),
                    "mask": torch.from_numpy(data["mask"][rows].astype(bool)),
                    "target": torch.from_numpy(data["target"][rows].astype(np.float32)),
                    "played": torch.from_numpy(data["played"][rows].astype(np.int64)),
                    "players": torch.from_numpy(data["players"][rows].astype(np.int64)),
                    "overruled": torch.from_numpy(data["played"][rows] != data["net_move"][rows])}
        self.search = tensors(~held)
        self.search_held = tensors(held) if held.any() else None
        sizes, counts = np.unique(data["players"], return_counts=True)
        return {"folder": str(folder), "decisions": int((~held).sum()),
                "held_out": int(held.sum()),
                "decisions_by_players": {str(int(n)): int(c) for n, c in zip(sizes, counts,
                                                                             strict=True)},
                "policy": settings["policy"], "policy_sha256": settings["policy_sha256"],
                "iterations": settings["iterations"],
                "gathered_seconds": round(float(settings["gathered_seconds"]), 1)}

    def on_update_start(self, learner: Any, ro: Any) -> bool:
        return self.search is not None

    def minibatch(self, learner: Any, k: int) -> dict[str, Any] | None:
        search = self.search
        if search is None:  # drawn only then: a run without them draws as before
            return None
        rows = learner.torch.randint(len(search["obs"]), (self.settings.search_batch,),
                                     generator=learner.gen)
        return {key: search[key][rows] for key in ("obs", "mask", "target")}

    def loss(self, learner: Any, batch: dict[str, Any]) -> Any:
        """The cross-entropy of the policy against the search's visit distributions: minus
        the sum over the legal actions of each one's visit share times its log-probability,
        averaged over the decisions."""
        torch = learner.torch
        logits, _ = learner.model(batch["obs"], batch["mask"])
        logp = torch.log_softmax(logits, -1).masked_fill(~batch["mask"], 0.0)
        return -(batch["target"] * logp).sum(-1).mean()

    def search_figures(self, learner: Any) -> dict[str, float]:
        """On the held-out search targets (none: ``{}``): the policy's cross-entropy against
        the visit distributions (``search_ce``) and the share of decisions where its most
        likely move is the move the search played (``search_agree``, by table size
        ``search_agree_<N>p``, on the decisions where the search played another move than
        its guiding network's most likely one ``search_agree_overruled``, and on the others
        ``search_agree_kept``)."""
        held = self.search_held
        if held is None:
            return {}
        torch = learner.torch
        with torch.no_grad():
            ce = self.loss(learner, held).item()
            logits, _ = learner.model(held["obs"], held["mask"])
            same = (logits.argmax(-1) == held["played"]).float()
        out = {"search_ce": round(ce, 4), "search_agree": round(same.mean().item(), 4)}
        # the decisions where the search overruled its guide carry what the search adds; on
        # the others, the search and its guide agree, and the policy should keep that move
        over = held["overruled"]
        if over.any():
            out["search_agree_overruled"] = round(same[over].mean().item(), 4)
        if (~over).any():
            out["search_agree_kept"] = round(same[~over].mean().item(), 4)
        for n in sorted(set(held["players"].tolist())):
            out[f"search_agree_{n}p"] = round(same[held["players"] == n].mean().item(), 4)
        return out


class SearchTargetsPlugin(TrainerCallback):
    """The search targets on the self-play trainer's hooks: at the start of the run the
    folder's decisions are loaded into the learner's :class:`SearchTargetLoss` (which fits
    them with every minibatch) and said in one line; each evaluation gains the policy's
    figures on the held-out decisions (``search_ce``, ``search_agree``, ...:
    :meth:`SearchTargetLoss.search_figures`)."""

    def __init__(self, settings: SearchTargetSettings) -> None:
        self.settings = settings

    def on_run_start(self, run: Any) -> None:
        hook = run.learner.hook(SearchTargetLoss)
        info = hook.load_folder(run.learner, self.settings.search_targets)
        run.search_info = info  # recorded in the policies' provenance
        total = info["decisions"] + info["held_out"]
        print(f"search targets: {total:,} decisions of ismcts-net "
              f"({info['iterations']} iterations a move; by table size "
              f"{info['decisions_by_players']}) from {info['folder']}, gathered in "
              f"{info['gathered_seconds']:,.1f} s; {info['decisions']:,} fitted, "
              f"{info['held_out']:,} held out for the evaluations", file=sys.stderr,
              flush=True)

    def on_eval_end(self, run: Any, row: dict[str, Any]) -> None:
        row.update(run.learner.hook(SearchTargetLoss).search_figures(run.learner))


def settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    from dragons_egg.agents.ppo import SHIPPED, file_sha256

    policy = str(Path(args.policy).resolve()) if args.policy else str(SHIPPED)
    return {"policy": policy, "policy_sha256": file_sha256(policy),
            "players": list(args.players), "iterations": args.iterations, "c": args.c,
            "matches_per_batch": args.matches_per_batch, "rounds": args.rounds,
            "seed": args.seed, "seconds": args.seconds, "batches": args.batches}


def play_batch(task: tuple[dict[str, Any], int]) -> dict[str, np.ndarray]:
    """Batch ``k`` of the folder with ``settings``: its matches played by ``ismcts-net`` at
    every seat, every decision with a choice kept (:data:`BATCH_KEYS`)."""
    from dragons_egg.agents.ismcts_net import NetISMCTSAgent
    from dragons_egg.agents.runner import play_match
    from dragons_egg_env.config import RulesConfig
    from dragons_egg_env.observation import pad

    settings, k = task
    sizes = settings["players"]
    n = sizes[k % len(sizes)]
    base = settings["seed"] * STRIDE + k
    rows: dict[str, list[Any]] = {key: [] for key in BATCH_KEYS if key != "meta"}

    class Recording(NetISMCTSAgent):
        def act(self, observation: Any, action_mask: Any) -> int:
            move = super().act(observation, action_mask)
            root = self.last_root
            if self.iterations_done and root is not None and root.prior is not None:
                target = np.zeros(len(action_mask), np.float32)
                for a, visits in root.visits.items():
                    target[a] = visits
                rows["obs"].append(pad(np.asarray(observation, np.float32), self.max_players,
                                       self.policy_players))
                rows["mask"].append(np.asarray(action_mask, bool))
                rows["target"].append(target / target.sum())
                rows["players"].append(n)
                rows["played"].append(move)
                rows["net_move"].append(max(root.prior, key=root.prior.__getitem__))
            return move

    bots = [Recording(seed=base * 16 + q, path=settings["policy"],
                      iterations=settings["iterations"], c=settings["c"]) for q in range(n)]
    config = RulesConfig(num_players=n, num_rounds=settings["rounds"])
    for m in range(settings["matches_per_batch"]):
        play_match(bots, config, seed=base * 1000 + m)
    out = {key: np.array(v) for key, v in rows.items()}
    out["players"] = out["players"].astype(np.int8)
    out["played"] = out["played"].astype(np.int16)
    out["net_move"] = out["net_move"].astype(np.int16)
    return out


def batch_path(folder: Path, k: int) -> Path:
    return folder / f"batch_{k:05d}.npz"


def save_batch(folder: Path, k: int, batch: dict[str, np.ndarray], seconds: float,
               settings: dict[str, Any]) -> None:
    """Batch ``k`` to ``folder`` (atomically), with the policy's digest and the gathering
    seconds so far (what a resume counts)."""
    meta = {"batch": k, "seconds": seconds, "policy_sha256": settings["policy_sha256"]}
    arrays = {**batch, "meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
    with atomic_path(batch_path(folder, k)) as tmp, open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)  # type: ignore[arg-type]


def read_batch(path: Path, digest: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A batch file, checked: a ``ValueError`` naming it when it is damaged, lacks an array,
    holds targets that are not distributions over the legal actions, or was searched with
    another policy file than ``digest``."""
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {key: z[key] for key in BATCH_KEYS}
        meta = json.loads(bytes(data.pop("meta")).decode())
    except Exception as exc:  # a truncated zip, a missing array, bad JSON: all refused
        raise ValueError(f"{path} is not a whole search-targets batch ({exc})") from None
    if meta.get("policy_sha256") != digest:
        raise ValueError(f"{path} was searched with another policy file (sha256 "
                         f"{str(meta.get('policy_sha256'))[:12]}..., not {digest[:12]}...)")
    r = len(data["obs"])
    target, mask = data["target"], data["mask"]
    if any(len(v) != r for v in data.values()) or target.shape != mask.shape or \
            not np.all(np.isfinite(target)) or np.any(target[~mask] != 0) or \
            not np.allclose(target.sum(-1), 1.0, atol=1e-4):
        raise ValueError(f"{path} is damaged: its targets are not distributions over the "
                         "legal actions of its rows")
    return data, meta


def load_targets(folder: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Every batch of a search-targets folder, checked (:func:`read_batch`) and joined (with
    ``batch``, each row's batch index), with its settings and the gathering seconds
    (``settings["gathered_seconds"]``)."""
    folder = Path(folder)
    settings = _read_settings(folder)
    parts, seconds = _batches(folder, settings)
    if not parts:
        raise ValueError(f"{folder} holds no search-targets batch yet")
    data = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    data["batch"] = np.concatenate([np.full(len(p["obs"]), k, np.int32)
                                    for k, p in enumerate(parts)])
    return data, {**settings, "gathered_seconds": seconds, "batches_done": len(parts)}


def _read_settings(folder: Path) -> dict[str, Any]:
    path = folder / "settings.json"
    try:
        settings: dict[str, Any] = json.loads(path.read_text())
        settings["players"], settings["policy_sha256"]  # noqa: B018 - both must be there
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{folder} is not a search-targets folder: {path} cannot be read "
                         f"({exc})") from None
    return settings


def _batches(folder: Path, settings: dict[str, Any]
             ) -> tuple[list[dict[str, np.ndarray]], float]:
    """The batches on disk, in order (a gap is refused: they are written in order)."""
    paths = sorted(folder.glob("batch_*.npz"))
    parts, seconds = [], 0.0
    for k, path in enumerate(paths):
        if path != batch_path(folder, k):
            raise ValueError(f"{folder}: {path.name} follows a missing batch "
                             f"({batch_path(folder, k).name})")
        data, meta = read_batch(path, settings["policy_sha256"])
        parts.append(data)
        seconds = float(meta.get("seconds", seconds))
    return parts, seconds


def wilson(share: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``share`` of ``n`` trials (within [0, 1],
    sound near 0 and 1, where the normal interval is not)."""
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(parts: list[dict[str, np.ndarray]], seconds: float) -> dict[str, Any]:
    """Per table size: decisions, the share where the search played another move than the
    network's most likely one, and the mean entropy of the visit distributions."""
    out: dict[str, Any] = {"seconds": round(seconds, 1), "batches": len(parts), "sizes": {}}
    if not parts:
        return out
    players = np.concatenate([p["players"] for p in parts])
    differ = np.concatenate([p["played"] != p["net_move"] for p in parts])
    target = np.concatenate([p["target"] for p in parts])
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(target > 0, target * np.log(target), 0.0).sum(-1)
    for n in sorted(set(players.tolist())):
        sel = players == n
        d = int(sel.sum())
        share = float(differ[sel].mean())
        out["sizes"][str(n)] = {"decisions": d, "search_differs": round(share, 4),
                                "search_differs_95": [round(x, 4) for x in wilson(share, d)],
                                "target_entropy": round(float(ent[sel].mean()), 4)}
    out["decisions"] = int(len(players))
    return out


def gather(folder: Path, settings: dict[str, Any], workers: int, progress: bool = True
           ) -> dict[str, Any]:
    """Play the batches the folder still lacks, each saved as it finishes; returns the
    summary (also written to ``summary.json``). A ``KeyboardInterrupt`` (Ctrl-C, SIGTERM)
    stops the workers; the finished batches stay."""
    import multiprocessing as mp

    parts, spent = _batches(folder, settings)
    t0 = time.perf_counter()
    limit: float | None = settings["seconds"]
    most = settings["batches"] or None
    next_k = len(parts)

    def elapsed() -> float:
        return spent + time.perf_counter() - t0

    def more(queued: int) -> bool:  # may one more batch start, with ``queued`` in flight?
        if most is not None and next_k >= most:
            return False
        if not limit:
            return True
        if not parts:
            return queued < workers
        pace = elapsed() / len(parts) * workers  # seconds per batch per worker
        return elapsed() + pace * (queued / workers + 1) <= limit

    bar = None
    if progress:
        from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type hints

        bar = tqdm(total=most, initial=len(parts), unit="batch", desc="search targets",
                   file=sys.stderr)
    with mp.get_context("spawn").Pool(workers, initializer=ignore_interrupts) as pool:
        pending: list[AsyncResult[Any]] = []
        while len(pending) < 2 * workers and more(len(pending)):
            pending.append(pool.apply_async(play_batch, ((settings, next_k),)))
            next_k += 1
        while pending:
            batch = pending.pop(0).get()
            save_batch(folder, len(parts), batch, elapsed(), settings)
            parts.append(batch)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(decisions=sum(len(p["obs"]) for p in parts))
            if more(len(pending)):
                pending.append(pool.apply_async(play_batch, ((settings, next_k),)))
                next_k += 1
    if bar is not None:
        bar.close()
    summary = summarize(parts, elapsed())
    write_atomically(folder / "summary.json", json.dumps(summary, indent=1))
    return summary


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog or "python -m dragons_egg.experiments.training.search_targets",
        description="Play matches with ismcts-net at every seat and keep, at each decision, "
                    "what the network reads and what the search played (visit "
                    "distributions): where search and network disagree, and targets for a "
                    "policy trained towards the search.")
    p.add_argument("--policy", default="",
                   help="the .npz policy the search is guided by (default: the shipped ppo)")
    p.add_argument("--players", type=int_range(2, 8), nargs="+", default=[2],
                   help="table sizes, in turn by batch (default 2)")
    p.add_argument("--iterations", type=int_range(1), default=100,
                   help="search iterations per move (default 100)")
    p.add_argument("--c", type=positive_float, default=1.5, help="PUCT exploration")
    p.add_argument("--rounds", type=int_range(1), default=3, help="rounds per match (R26)")
    p.add_argument("--matches-per-batch", type=int_range(1), default=4)
    p.add_argument("--seconds", type=positive_float, default=None,
                   help="stop starting batches that would end past this many seconds of "
                        "gathering in all (across resumes)")
    p.add_argument("--batches", type=int_range(1), default=None, help="batches in all")
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--workers", type=int_range(1), default=1)
    p.add_argument("--out", help="a new folder for the batches")
    p.add_argument("--resume", metavar="DIR",
                   help="continue the folder DIR with its saved settings (only --workers "
                        "may be given besides)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    return p


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = build_parser(prog)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    require_cli(parser.prog, "experiments")  # tqdm's bar (numpy and the agents: the core)
    folder: Path | None = None
    try:
        if args.resume:
            given = {a.split("=")[0] for a in argv if a.startswith("--")}
            extra = sorted(given - {"--resume", "--workers", "--no-progress"})
            if extra:
                parser.error(f"--resume continues with the folder's saved settings: leave "
                             f"out {', '.join(extra)}")
            folder = Path(args.resume)
            settings = _read_settings(folder)
        else:
            if not args.out:
                parser.error("give --out (a new folder) or --resume DIR")
            if not args.seconds and not args.batches:
                parser.error("give --seconds or --batches: how much to gather")
            from dragons_egg.agents import AgentSpecError, parse_spec

            try:  # the policy file, checked as ismcts-net checks it, before any work
                parse_spec(f"ismcts-net:path={args.policy}" if args.policy else "ismcts-net")
            except AgentSpecError as exc:
                parser.error(str(exc))
            folder = claim_output(args.out, FOLDER_FILES, what="search targets",
                                  way_on=f"continue them with --resume {args.out}, or give "
                                         "another --out")
            settings = settings_from_args(args)
            write_atomically(folder / "settings.json", json.dumps(settings, indent=1))
        from dragons_egg.agents.ppo import file_sha256

        try:
            digest = file_sha256(settings["policy"])
        except OSError as exc:
            raise ValueError(f"the policy file {settings['policy']} that {folder} was searched "
                             f"with cannot be read ({exc.strerror or exc}): put it back, or "
                             "give its path in settings.json") from None
        if digest != settings["policy_sha256"]:
            raise ValueError(f"{settings['policy']} is not the policy file {folder} was "
                             "searched with (its SHA-256 differs)")
        summary = gather(folder, settings, args.workers, args.progress)
    except ValueError as exc:
        parser.error(str(exc))
    except KeyboardInterrupt:
        if folder is None:
            print("interrupted", file=sys.stderr, flush=True)
            return 130
        done = len(list(folder.glob("batch_*.npz")))
        print(f"interrupted: {done} batches saved in {folder}; resume with: "
              f"{parser.prog} --resume {folder}", file=sys.stderr, flush=True)
        return 130
    for n, s in summary["sizes"].items():
        print(f"{n} players: {s['decisions']:,} decisions; the search played another move "
              f"than the network in {s['search_differs']:.1%} "
              f"[{s['search_differs_95'][0]:.1%}, {s['search_differs_95'][1]:.1%}]")
    print(f"{summary['batches']} batches, {summary['seconds']:,.1f} s of gathering: {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
