"""Train a Dragon's Egg agent with MaskablePPO (sb3-contrib) and self-play.

One learner holds one seat of :class:`dragons_egg_env.wrappers.SingleAgentEnv`; the other
seats draw opponents from a pool that starts with baseline agents and gains a frozen snapshot of
the learner every ``snapshot_every`` steps (the newest ``max_snapshots`` stay; the baselines
always stay, so the policy cannot collapse onto itself). Matches have ``num_rounds`` rounds, so
the learner makes tribute choices whenever it won the previous round.

Every ``eval_every`` steps the current policy plays a duplicate-deal tournament
(:mod:`dragons_egg.experiments.evaluation.tournament`) against fixed opponents; the mean match
score, its
difference to each opponent with a 95% interval, and the Dragon and Egg rates go to TensorBoard, to
the run's ``progress.csv`` and to ``eval.csv``; ``learning_curve.png`` is drawn at the end.

The whole configuration is :class:`TrainConfig`; every field is a command-line flag and may
come from a JSON or TOML file (``--config FILE``) or from a training config packaged with
``dragons_egg.experiments`` by its name (``--config shipped``: the agent shipped with 0.1.0
and 0.2.0); the resolved config is saved as ``config.json`` in the run folder
``<out_dir>/<run_name>`` (default name ``ppo-seed<seed>``). Checkpoints
(``checkpoints/step_<n>.zip`` with a ``.json`` of the pool, evaluation history and config) are
written every ``checkpoint_every`` steps and at the end (``final.zip``).

``--resume CHECKPOINT`` continues the run of a checkpoint in its own run folder, with the
settings saved beside it; settings given on the command line (flags, or those a ``--config``
file names) override single ones, each change printed and recorded in the run's
``config_history.json``. Those MaskablePPO keeps in the checkpoint (:data:`FROZEN_ON_RESUME`:
the network, the PPO hyperparameters) and the largest table size (the observation size)
cannot change. ``eval.csv`` holds the checkpoint's evaluations and continues them. An SB3
checkpoint runs code when it is loaded (SB3 unpickles its ``data`` entry), so ``--resume`` needs
``--trust-checkpoint`` (:func:`check_resume`), for a checkpoint whose source you trust; that
trust extends to the snapshots its pool names, not to the agents its settings name: an agent
spec that runs code (``trust=1``, ``rllib:path=``, ``MODULE:CLASS``) read from the checkpoint's
``.json`` or a ``--config`` file is refused unless given again with ``--allow-code SPEC``
(:func:`~.scaffold.trainer_command`). Snapshots and evaluation copies the run writes itself are
played as ``ppo:path=FILE.zip,trust=1``.

The run is an :class:`SB3Run`, a :class:`~.lifecycle.TrainerRun` (settings, run folder,
resume's config history, Ctrl-C, hooks, evaluation rows, run output, the command line's exits);
it adds the VecEnv, the MaskablePPO model, the opponent pool and the periodic work, reached from
SB3's loop through :class:`SelfPlayCallback`.

SB3 trains whole rollouts of ``n_steps x n_envs`` steps, so the run says at the start when it
will go past ``total_timesteps``, and by how much. An evaluation interval from fewer deal
sequences than the tournament's minimum
(:data:`~dragons_egg.experiments.evaluation.tournament.MIN_SEQUENCES`) is left out (NaN; an empty
cell in
``eval.csv``). Torch runs on
``torch_threads`` threads (default 1: on 2 cores more threads made updates ~10x slower while
another process was busy). The same seed gives the same run as far as torch allows.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from dragons_egg.experiments.common.files import atomic_path, write_atomically
from dragons_egg.experiments.common.runs import (
    json_ready,
    resumed_settings,
    stops_on_sigterm,
)
from dragons_egg.experiments.common.settings import (
    check_range,
    checks_deferred,
    class_cache,
    module_prog,
    require,
)
from dragons_egg.experiments.evaluation.versus import format_estimate
from dragons_egg.experiments.training.callbacks import TrainerCallback
from dragons_egg.experiments.training.lifecycle import TrainerRun
from dragons_egg.experiments.training.scaffold import (
    RulesSettings,
    RunSettings,
    TrainerCommand,
    check_rules_kept,
    check_saved_consent,
    tournament_flags,
    trainer_command,
)
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.extras import require_cli

DEFAULT_OPPONENTS = ("heuristic", "greedy", "random")
#: Settings a resumed run cannot change, with the reason (and the largest of ``table_sizes``,
#: which sizes the observations).
FROZEN_ON_RESUME = {name: "MaskablePPO keeps it in the checkpoint" for name in (
    "net_arch", "learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda",
    "clip_range", "ent_coef")}


@dataclass(frozen=True)
class TrainConfig(RulesSettings, RunSettings):
    """Every setting of a training run (each is a ``--flag`` of the same name); those every
    trainer has are :class:`~.scaffold.RunSettings`'."""

    RUN_PREFIX: ClassVar[str] = "ppo"
    AGENT_SPECS: ClassVar[tuple[str, ...]] = (*RunSettings.AGENT_SPECS, "opponents")

    #: Environment steps (learner decisions) to train for, in total.
    total_timesteps: int = 150_000
    #: Table sizes drawn per episode; observations are padded to the largest.
    table_sizes: tuple[int, ...] = (4,)
    #: The rules of every match the run plays (:class:`~dragons_egg_env.config.RulesConfig`):
    #: the training episodes' at each of ``table_sizes``, and the evaluations', whose table
    #: size is its ``num_players``. ``--rules FILE|JSON``, ``--rule FLAG=VALUE``,
    #: ``--num-rounds N`` and ``--eval-players N`` set it, as for the self-play trainer.
    rules: RulesConfig = RulesConfig()
    #: Baseline opponents, kept in the pool for the whole run.
    opponents: tuple[str, ...] = DEFAULT_OPPONENTS
    #: Add a frozen snapshot of the learner to the pool every this many steps (0: never).
    snapshot_every: int = 50_000
    max_snapshots: int = 5
    #: Pool weight of each snapshot (each baseline weighs 1).
    snapshot_weight: float = 1.0
    n_envs: int = 2
    #: "dummy" (one process) or "subproc" (one process per env).
    vec_env: str = "dummy"
    learning_rate: float = 3e-4
    n_steps: int = 1024
    batch_size: int = 256
    n_epochs: int = 5
    gamma: float = 0.995
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    net_arch: tuple[int, ...] = (256, 256)
    #: Evaluate every this many steps (0: only at the end).
    eval_every: int = 50_000
    #: Matches per evaluation (rounded up to whole rotations of the table).
    eval_matches: int = 40
    #: Save a checkpoint every this many steps (0: only at the end).
    checkpoint_every: int = 50_000

    @classmethod
    def migrate(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Settings written before the run held one ``RulesConfig`` (``num_rounds`` beside a
        ``rules`` object of the other flags: config files, ``config.json``, checkpoints) in
        today's form; the evaluations' table size was the largest of ``table_sizes``."""
        if not isinstance(data, dict) or "num_rounds" not in data:
            return data
        rules = data.get("rules", {})
        out = {k: v for k, v in data.items() if k != "num_rounds"}
        if not isinstance(rules, dict):
            return out  # the type check names it
        sizes = data.get("table_sizes", cls.table_sizes)
        most = max(sizes) if isinstance(sizes, list | tuple) and sizes and all(
            isinstance(n, int) for n in sizes) else RulesConfig().num_players
        out["rules"] = {"num_players": most, **rules, "num_rounds": data["num_rounds"]}
        return out

    def check(self) -> None:
        """Checked when made (``__post_init__``): :meth:`validate`."""
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad setting: its type (the field's
        annotation: :func:`~dragons_egg.experiments.common.settings.check_fields`), then its
        range."""
        from dragons_egg.agents import parse_spec

        self.validate_run()
        for name in ("learning_rate", "clip_range"):
            check_range(getattr(self, name) > 0, name, getattr(self, name), "> 0")
        for name in ("ent_coef", "snapshot_weight"):
            check_range(getattr(self, name) >= 0, name, getattr(self, name), ">= 0")
        require(bool(self.eval_opponents), "eval_opponents must name at least one agent")
        check_range(self.total_timesteps >= 1, "total_timesteps", self.total_timesteps, ">= 1")
        require(bool(self.table_sizes), "table_sizes must not be empty")
        for n in self.table_sizes:
            dataclasses.replace(self.rules, num_players=n)
        check_range(self.eval_players <= self.max_players, "eval_players",
                    self.eval_players, f"at most the largest table size ({self.max_players}): "
                    "the policy reads observations padded to it")
        require(bool(self.opponents), "opponents must name at least one agent")
        for spec in self.opponents:
            parse_spec(spec)
        check_range(self.n_envs >= 1, "n_envs", self.n_envs, ">= 1")
        require(self.vec_env in ("dummy", "subproc"), f"vec_env must be dummy or subproc, got "
                                                      f"{self.vec_env!r}")
        for name in ("n_steps", "batch_size"):
            check_range(getattr(self, name) >= 2, name, getattr(self, name), ">= 2")
        check_range(self.n_epochs >= 1, "n_epochs", self.n_epochs, ">= 1")
        check_range(0 < self.gamma <= 1, "gamma", self.gamma, "in (0, 1]")
        check_range(0 <= self.gae_lambda <= 1, "gae_lambda", self.gae_lambda, "in [0, 1]")
        check_range(bool(self.net_arch) and all(w > 0 for w in self.net_arch), "net_arch",
                    self.net_arch, "positive layer sizes")
        for name in ("snapshot_every", "max_snapshots"):
            check_range(getattr(self, name) >= 0, name, getattr(self, name), ">= 0")

    @property
    def max_players(self) -> int:
        return max(self.table_sizes)


# ---------------------------------------------------------------------------------------
# Configuration from files and the command line.

RESUME_HELP = ("continue the run of this checkpoint (checkpoints/step_N.zip) in its own run "
               "folder with its saved settings; settings given here (flags, or those a "
               "--config file names) override single ones, each change printed and recorded "
               "in config_history.json; the network, the PPO hyperparameters and the largest "
               "table size cannot change; needs --trust-checkpoint, and --allow-code SPEC "
               "for a saved agent spec that runs code")
TRUST_HELP = ("load the --resume checkpoint (and the snapshots its pool names; the agents "
              "its settings name need --allow-code): an SB3 checkpoint runs code stored in "
              "it when it is loaded (pickle), so give this only for a checkpoint from a "
              "source you trust, such as your own run")


def _resumed(checkpoint: str, parsed: TrainConfig, given: frozenset[str],
             trust: bool, allowed: list[str]) -> TrainConfig:
    return resumed_config(checkpoint, {k: getattr(parsed, k) for k in given}, trust, allowed)


def parse_args(argv: Sequence[str] | None = None, prog: str | None = None) -> TrainerCommand:
    """The settings of the command line and what to do with the run folder (tyro, as every
    trainer's: :func:`~.scaffold.trainer_command`): ``--config FILE|NAME`` (JSON or TOML, or a
    packaged config), then the flags; with ``--resume``, the checkpoint's settings with those
    given (:func:`resumed_config`). Bad input is a one-line error and exit status 2."""
    return trainer_command(TrainConfig, argv,
                           "Train a Dragon's Egg agent with MaskablePPO and self-play.",
                           prog=prog, resume_help=RESUME_HELP, resume_metavar="CHECKPOINT.zip",
                           trust_help=TRUST_HELP, resumed=_resumed)


def saved_config(meta: dict[str, Any], path: str | Path) -> TrainConfig:
    """The settings recorded beside a checkpoint (its ``.json``); a ``ValueError`` when there
    are none or some this version does not have. Their types are checked, not their agent
    specs, which are not parsed (a ``MODULE:CLASS`` spec's module would be imported):
    :func:`resumed_config` asks for consent first, and a run checks what it runs with."""
    data = meta.get("config")
    if not isinstance(data, dict):
        raise ValueError(f"checkpoint {path} has no settings in its .json")
    try:
        data = TrainConfig.migrate(data)
    except ValueError as exc:
        raise ValueError(f"checkpoint {path}: {exc}") from None
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(TrainConfig)})
    if unknown:
        raise ValueError(f"checkpoint {path} has settings this version does not know: "
                         f"{', '.join(unknown)}")
    with checks_deferred():
        return TrainConfig.from_dict(data)


def check_resume(resume: str | Path, trust: bool = False) -> Path:
    """The checkpoint ``--resume`` names, checked before SB3 reads it: it exists and is an SB3
    ``.zip``, and ``trust`` (``--trust-checkpoint``) is given, since loading it runs code
    stored in it (only the SB3 checkpoint shipped in the package, known by its sha256, needs
    none: :func:`dragons_egg.agents.ppo.check_trust`). A one-line ``ValueError`` otherwise."""
    from dragons_egg.agents.ppo import CheckpointError, check_trust, checkpoint_format

    rp = Path(resume)
    if not rp.is_file():
        raise ValueError(f"--resume: checkpoint {resume} does not exist")
    try:
        if checkpoint_format(rp) != "sb3":
            raise ValueError(f"--resume: {rp} is a policy file (.npz), not a checkpoint of "
                             "this trainer (checkpoints/step_N.zip)")
        check_trust(rp, trust, how="--trust-checkpoint")
    except CheckpointError as exc:
        raise ValueError(f"--resume: {exc}") from None
    return rp


def resumed_config(resume: str | Path, values: dict[str, Any], trust: bool = False,
                   allow_code: Collection[str] = ()) -> TrainConfig:
    """The settings ``--resume`` continues with: the checkpoint's, with the ``values`` given
    on the command line; in the checkpoint's run folder unless ``out_dir`` or ``run_name`` is
    given. A ``ValueError`` for a missing, untrusted (:func:`check_resume`) or corrupt
    checkpoint, or a setting that cannot change (:data:`FROZEN_ON_RESUME`, the largest table
    size); a :class:`~dragons_egg.agents.consent.ConsentError` for a saved agent spec the run
    keeps that runs code and is not in ``allow_code`` (:func:`~.scaffold.check_saved_consent`,
    before the checkpoint is loaded: ``--trust-checkpoint`` trusts the checkpoint and its
    snapshots, not the agents its settings name)."""
    from dragons_egg.agents.ppo import CheckpointError, load_policy

    rp = check_resume(resume, trust)
    saved = saved_config(_checkpoint_meta(rp), rp)
    check_saved_consent(saved, values, rp, allow_code)
    try:
        load_policy(rp, trust=trust)  # clear errors for a corrupt file
    except CheckpointError as exc:
        raise ValueError(str(exc)) from None
    parsed = dataclasses.replace(saved, **values)
    if max(parsed.table_sizes) != max(saved.table_sizes):
        raise ValueError(f"--table-sizes cannot change the largest table size on resume (the "
                         f"checkpoint's observations are padded to {saved.max_players} seats): "
                         f"the checkpoint has {saved.table_sizes}")
    if "rules" in values:
        check_rules_kept(saved.rules, parsed.rules)
    cfg: TrainConfig = resumed_settings(saved, parsed, set(values), rp, FROZEN_ON_RESUME)
    return cfg


# ---------------------------------------------------------------------------------------
# Training.

def make_env_fn(cfg: TrainConfig, rank: int) -> Callable[[], Any]:
    """A factory of one training env (``rank``: its index in the VecEnv): the learner's seat of
    :class:`dragons_egg_env.wrappers.SingleAgentEnv`, in SB3's ``Monitor``."""
    def make() -> Any:
        from stable_baselines3.common.monitor import Monitor

        from dragons_egg.agents import AgentSpec
        from dragons_egg_env.wrappers import SingleAgentEnv

        if cfg.vec_env == "subproc":
            import signal

            # in the env's own process: Ctrl-C, or a scheduler's SIGTERM to every process of
            # the job, is for the trainer, which saves a checkpoint and then closes the envs
            # (they also end when the trainer's end of their pipe closes)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

        env = SingleAgentEnv(opponents=[AgentSpec(s) for s in cfg.opponents],
                             table_sizes=cfg.table_sizes,
                             num_rounds=cfg.num_rounds, max_players=cfg.max_players,
                             **tournament_flags(cfg.rules))
        return Monitor(env)
    return make


def _pool(cfg: TrainConfig, snapshots: Sequence[str]) -> tuple[list[Any], list[float]]:
    """The opponent pool (agent factories) and its weights: the configured opponents, then
    the self-play snapshots."""
    from dragons_egg.agents import AgentSpec

    # the run's own snapshots, or those of a checkpoint resumed with --trust-checkpoint
    specs = list(cfg.opponents) + [f"ppo:path={p},trust=1" for p in snapshots]
    weights = [1.0] * len(cfg.opponents) + [cfg.snapshot_weight] * len(snapshots)
    return [AgentSpec(s) for s in specs], weights


def evaluate(model_path: Path, cfg: TrainConfig, seed: int) -> dict[str, Any]:
    """The policy at ``model_path`` against ``eval_opponents`` at ``eval_players`` seats
    (:func:`~dragons_egg.experiments.evaluation.versus.evaluate_agent`, as every trainer)."""
    me = f"ppo:path={model_path},trust=1"  # the copy this run just saved
    return cfg.evaluate(me, players=cfg.eval_players, seed=seed, num_rounds=cfg.num_rounds,
                        rules=tournament_flags(cfg.rules))


def _checkpoint_meta(path: Path) -> dict[str, Any]:
    meta = path.with_suffix(".json")
    if not meta.is_file():
        raise ValueError(f"checkpoint {path} has no {meta.name} beside it (pool and history)")
    try:
        out: dict[str, Any] = json.loads(meta.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"checkpoint metadata {meta} is corrupt: {exc}") from None
    return out


#: What the commands this trainer prints to resume a run of its own add after ``--resume
#: CHECKPOINT`` (an SB3 checkpoint loads only when trusted: the run's own is).
RESUME_FLAGS = " --trust-checkpoint"
#: What a run writes in its folder (globs): one of them there means the folder holds a run,
#: and ``--overwrite`` removes exactly these.
RUN_FILES = ("config.json", "config_history.json", "checkpoints", "snapshots", "eval.csv",
             "eval-before-resume-*.csv", "progress.csv", "learning_curve.png",
             "events.out.tfevents.*")


def save_zip(model: Any, path: Path) -> Path:
    """``model.save`` to ``path``, whole (a temporary file of this process's own, renamed:
    :func:`~dragons_egg.experiments.common.files.atomic_path`)."""
    with atomic_path(path) as tmp:
        model.save(str(tmp))  # NAME.zip.tmp: a suffix, so SB3 adds no .zip
    return path


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint of ``run_dir`` with the most timesteps (``checkpoints/step_N.zip`` or
    ``final.zip``, as its ``.json`` records them; the newer file on a tie), if any."""
    found = []
    for path in (run_dir / "checkpoints").glob("*.zip"):
        try:
            steps = json.loads(path.with_suffix(".json").read_text())["num_timesteps"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # no metadata: not a checkpoint --resume takes
        found.append((steps, path.stat().st_mtime, path))
    return max(found)[2] if found else None


def sample_budget(cfg: TrainConfig, now: int) -> dict[str, Any]:
    """How far the run will go from ``now`` timesteps: SB3 collects whole rollouts of
    ``n_steps x n_envs`` steps until it reaches ``total_timesteps``."""
    per = cfg.n_steps * cfg.n_envs
    will = now + -(-max(cfg.total_timesteps - now, 0) // per) * per
    return {"asked": cfg.total_timesteps, "rollout_steps": per, "will_train": will,
            "overshoot": max(will - cfg.total_timesteps, 0)}


def announce_budget(cfg: TrainConfig, now: int) -> dict[str, Any]:
    """Print one line when the run will go past ``total_timesteps`` (not a multiple of the
    rollout size), saying by how much; returns :func:`sample_budget`."""
    b = sample_budget(cfg, now)
    if now < cfg.total_timesteps and b["overshoot"]:
        print(f"total_timesteps {b['asked']:,} is not a multiple of the rollout size "
              f"{b['rollout_steps']:,} (n_steps x n_envs): asked {b['asked']:,}, will train "
              f"{b['will_train']:,}, overshoot {b['overshoot']:,}", file=sys.stderr,
              flush=True)
    return b


def _resumed_pool(resume: str, trust: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
    """The snapshots (those still on disk) and evaluation history of a checkpoint; a
    ``ValueError`` for a missing, untrusted or corrupt checkpoint, and for snapshots (SB3 zips,
    which run code when loaded) without ``trust``."""
    from dragons_egg.agents.ppo import CheckpointError, load_policy

    rp = check_resume(resume, trust)
    try:
        load_policy(rp, trust=trust)  # clear errors for a corrupt file
    except CheckpointError as exc:
        raise ValueError(str(exc)) from None
    meta = _checkpoint_meta(rp)
    snapshots = [s for s in meta.get("snapshots", []) if Path(s).is_file()]
    if snapshots and not trust:
        raise ValueError(f"--resume: checkpoint {rp} names snapshots for its pool, SB3 zips "
                         "that run code when loaded: resume with --trust-checkpoint if you "
                         "trust them")
    history = [{k: float("nan") if v is None else v for k, v in h.items()}  # JSON null: NaN
               for h in meta.get("history", [])]
    return snapshots, history


def make_model(cfg: TrainConfig, venv: Any, resume: str | None, trust: bool = False) -> Any:
    """A new MaskablePPO learner on ``venv``, or the one saved at ``resume`` (loaded from the
    bytes :func:`check_resume` vouched for)."""
    import hashlib
    import io

    from sb3_contrib import MaskablePPO

    from dragons_egg.agents.ppo import TRUSTED_SB3_SHA256, untrusted_message

    if resume:
        data = check_resume(resume, trust).read_bytes()
        if not trust and hashlib.sha256(data).hexdigest() not in TRUSTED_SB3_SHA256:
            raise ValueError(f"--resume: {untrusted_message(resume, '--trust-checkpoint')}")
        model = MaskablePPO.load(io.BytesIO(data), env=venv, device="cpu")
        model.set_random_seed(cfg.seed + model.num_timesteps)
        return model
    return MaskablePPO(
        "MlpPolicy", venv, learning_rate=cfg.learning_rate, n_steps=cfg.n_steps,
        batch_size=cfg.batch_size, n_epochs=cfg.n_epochs, gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda, clip_range=cfg.clip_range, ent_coef=cfg.ent_coef,
        policy_kwargs={"net_arch": list(cfg.net_arch)}, seed=cfg.seed, device="cpu",
        verbose=0)


class SB3Run(TrainerRun):
    """A MaskablePPO run with self-play: its lifecycle is :class:`~.lifecycle.TrainerRun`'s
    (settings, run folder, hold on Ctrl-C, hooks, history and config history, run output);
    this class adds the VecEnv and the SB3 model, the opponent pool and the periodic work
    that :class:`SelfPlayCallback` (what ``model.learn`` calls) forwards here: every
    ``snapshot_every`` steps a frozen snapshot of the learner joins the pool (the newest
    ``max_snapshots`` stay), every ``eval_every`` steps an evaluation, every
    ``checkpoint_every`` steps a checkpoint. It is what the hooks get (``cfg``, ``model``,
    ``run_dir``, ``history``).

    Its state: the pool's ``snapshots`` (paths), the evaluation ``history``, the next step
    ``marks`` of each task and the ``start`` time. Building it imports SB3 and torch (this
    module does not); :meth:`run_eval` and :meth:`save_checkpoint` also serve after
    training."""

    RUN_FILES = RUN_FILES
    SUBFOLDERS = ("checkpoints", "snapshots")
    UNIT = "timesteps"
    RESUME_FLAGS = RESUME_FLAGS
    EXIT_ON_ERROR = True
    latest_checkpoint = staticmethod(latest_checkpoint)
    cfg: TrainConfig

    def __init__(self, cfg: TrainConfig, resume: str | None = None, trust: bool = False,
                 overwrite: bool = False, callbacks: Iterable[TrainerCallback] = ()) -> None:
        import torch
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        self.begin(cfg, resume, overwrite, callbacks)
        torch.set_num_threads(cfg.torch_threads)
        self.resume = resume
        self.snapshots: list[str] = []
        if resume:
            self.snapshots, self.history = _resumed_pool(resume, trust)
        meta = _checkpoint_meta(Path(resume)) if resume else {}
        vec_cls = SubprocVecEnv if cfg.vec_env == "subproc" else DummyVecEnv
        self.venv = vec_cls([make_env_fn(cfg, i) for i in range(cfg.n_envs)])
        try:  # the env processes end with a start that fails
            self.venv.env_method("set_pool", *_pool(cfg, self.snapshots))
            self.model = make_model(cfg, self.venv, resume, trust)
            self._start(meta)
        except BaseException:
            self.venv.close()
            raise

    def _start(self, meta: dict[str, Any]) -> None:
        """The run on its model: the marks, the config history, the output, the budget."""
        from stable_baselines3.common.logger import configure

        cfg, model, resume = self.cfg, self.model, self.resume
        model.set_logger(configure(str(self.run_dir), ["csv", "tensorboard"]))
        now = model.num_timesteps
        # the evaluation after the history's last, the snapshot after the pool's newest: one a
        # Ctrl-C cut is due again at once
        last_eval = self.history[-1]["timesteps"] if self.history else 0
        last_snap = max((int(m[1]) for s in self.snapshots
                         if (m := re.search(r"snap_(\d+)\.zip$", str(s)))), default=0)
        self.marks = {"snap": _next(last_snap, cfg.snapshot_every),
                      "eval": _next(last_eval, cfg.eval_every),
                      "ckpt": _next(now, cfg.checkpoint_every)}
        self.start = time.time()
        #: The timesteps of the last finished update: what the weights have learned from.
        self.boundary = now
        #: Whether a rollout ended whose update has not been reported yet.
        self.updating = False
        if resume:  # checkpoints from before the config history have none
            self.resumed(resume, now, saved_config(meta, resume),
                         meta.get("config_history", []))
        # the evaluations' scalars go to SB3's logger (its TensorBoard files, progress.csv)
        self.open_output(bool(resume), now,
                         scalar=lambda tag, value, step: model.logger.record(tag, value))
        #: What :func:`announce_budget` said of the run's timesteps.
        self.budget: dict[str, Any] | None = announce_budget(cfg, now)
        self.run_started()

    def train(self) -> Path:
        """Train to ``total_timesteps``, then the final evaluation and checkpoint
        (``final.zip``, returned). A Ctrl-C (held during an update, from the end of a rollout
        to the start of the next) saves the checkpoint of the last finished update."""
        model = self.model
        remaining = self.cfg.total_timesteps - model.num_timesteps
        try:
            if remaining > 0:
                model.learn(remaining, callback=SelfPlayCallback.create(self),
                            reset_num_timesteps=not self.resume, progress_bar=self.cfg.progress)
            if not self.history or self.history[-1]["timesteps"] != model.num_timesteps:
                self.run_eval()
            final = self.save_checkpoint("final")
        except KeyboardInterrupt:
            raise self.interrupted(self.boundary, self._save_boundary) from None
        finally:
            self.hold.release()
            self.venv.close()
        self.output.redraw()
        self.run_ended(final)
        print(f"final checkpoint: {final}", file=sys.stderr)
        return final

    # -- what SelfPlayCallback forwards ------------------------------------------------------
    def rollout_ended(self) -> None:
        self.callbacks.on_rollout_end(self, {"timesteps": self.model.num_timesteps})
        self.updating = True
        self.hold.start()  # SB3 updates the weights next

    def rollout_starting(self) -> None:
        # between two updates: the weights have learned from every step counted so far
        self.training_ended()
        self.periodic()

    def training_ended(self) -> None:
        self.boundary = self.model.num_timesteps
        self.hold.stop()  # a Ctrl-C held during the update is raised here
        if self.updating:
            self.updating = False
            self.callbacks.on_update_end(self, {"timesteps": self.model.num_timesteps})

    def periodic(self) -> None:
        """The snapshot, evaluation and checkpoint due by now, each after the update that
        reached its mark (at the start of a rollout, never in the middle of one: what they
        save or measure has learned from every step counted)."""
        t = self.model.num_timesteps
        cfg = self.cfg
        if self.marks["snap"] and t >= self.marks["snap"]:
            self.add_snapshot(t)
            self.marks["snap"] = _next(t, cfg.snapshot_every)
        if self.marks["eval"] and t >= self.marks["eval"]:
            self.run_eval()
            self.marks["eval"] = _next(t, cfg.eval_every)
        if self.marks["ckpt"] and t >= self.marks["ckpt"]:
            self.marks["ckpt"] = _next(t, cfg.checkpoint_every)
            self.save_checkpoint(f"step_{t}")

    def _save_boundary(self) -> Path:
        """After a Ctrl-C: the checkpoint ``step_<t>`` of the last finished update (the steps
        of an unfinished rollout are dropped, as if never taken; they are taken again on
        resume)."""
        self.model.num_timesteps = self.boundary
        return self.save_checkpoint(f"step_{self.boundary}")

    def add_snapshot(self, t: int) -> None:
        """Save the learner as ``snapshots/snap_<t>.zip``, keep the newest ``max_snapshots``
        of them in the pool and hand the pool to the training envs."""
        path = self.run_dir / "snapshots" / f"snap_{t}.zip"
        save_zip(self.model, path)
        self.snapshots.append(str(path))
        excess = len(self.snapshots) - self.cfg.max_snapshots
        if excess > 0:
            del self.snapshots[:excess]
        # the VecEnv that model.learn steps (BaseCallback's training_env)
        self.model.get_env().env_method("set_pool", *_pool(self.cfg, self.snapshots))

    def save_checkpoint(self, name: str) -> Path:
        """``checkpoints/<name>.zip`` and a ``.json`` beside it with the step count, the pool's
        snapshots, the evaluation history and the config; returns the ``.zip`` path."""
        path = self.run_dir / "checkpoints" / f"{name}.zip"
        save_zip(self.model, path)
        t = self.model.num_timesteps
        budget = None if self.budget is None else {
            **self.budget, "trained": t, "overshoot": max(t - self.cfg.total_timesteps, 0)}
        # the .json last: a checkpoint counts (latest_checkpoint) once both are whole
        write_atomically(path.with_suffix(".json"), json.dumps(json_ready(
            {"num_timesteps": t, "snapshots": self.snapshots, "history": self.history,
             "config": dataclasses.asdict(self.cfg), "config_history": self.config_history,
             "budget": budget}), indent=1))
        return self.checkpoint_written(path)

    def run_eval(self) -> None:
        """Evaluate the current policy (:func:`evaluate`); the figures go to the history, the
        SB3 logger (``eval/...``), ``eval.csv`` and stderr."""
        model = self.model
        path = self.run_dir / "snapshots" / "eval_current.zip"
        save_zip(model, path)
        res = self.record_eval({
            "timesteps": model.num_timesteps, "seconds": round(time.time() - self.start, 1),
            **evaluate(path, self.cfg, seed=self.cfg.seed + 7919)})
        model.logger.dump(model.num_timesteps)
        sys.stderr.write(f"[eval @ {model.num_timesteps} steps] mean match score "
                         f"{format_estimate(res, 'mean_score')}  Dragon "
                         f"{res['dragon_rate']:.2f}  Egg {res['egg_rate']:.2f}\n")
        sys.stderr.flush()


class SelfPlayCallback:
    """What ``model.learn`` calls, as a stable-baselines3 callback: each point of SB3's loop
    forwarded to the :class:`SB3Run`, ``run`` (the end of a rollout, the start of the next,
    the end of training). :meth:`create` makes one that ``model.learn`` accepts (SB3's
    ``BaseCallback`` is mixed in there, so that importing this module needs neither SB3 nor
    torch)."""

    if TYPE_CHECKING:
        #: BaseCallback's: the model ``model.learn`` trains (set by ``init_callback``).
        model: Any

    def __init__(self, run: SB3Run) -> None:
        super().__init__()  # BaseCallback's, where create() mixed it in
        self.run = run

    @classmethod
    def create(cls, run: SB3Run) -> SelfPlayCallback:
        """An instance that is also an SB3 ``BaseCallback`` (imports SB3)."""
        return _with_base_callback(cls)(run)

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.run.rollout_ended()

    def _on_rollout_start(self) -> None:
        self.run.rollout_starting()

    def _on_training_end(self) -> None:
        self.run.training_ended()


@class_cache
def _with_base_callback(cls: type[SelfPlayCallback]) -> type[SelfPlayCallback]:
    """``cls`` with SB3's ``BaseCallback`` mixed in (made once per class)."""
    from stable_baselines3.common.callbacks import BaseCallback

    return cast(type[SelfPlayCallback],
                type(cls.__name__, (cls, BaseCallback), {"__module__": cls.__module__,
                                                         "__doc__": cls.__doc__}))


def train(cfg: TrainConfig, resume: str | None = None, trust: bool = False,
          overwrite: bool = False, callbacks: Iterable[TrainerCallback] = ()) -> Path:
    """Run (or resume) training (an :class:`SB3Run`); returns the path of the final
    checkpoint. ``trust`` (``--trust-checkpoint``) lets ``resume`` be loaded
    (:func:`check_resume`). ``callbacks`` are hooks on the run (:mod:`.callbacks`), called
    with the :class:`SB3Run` (``cfg``, ``model``, ``run_dir``, ``history``).

    A run folder holds one run: a folder with another run's files (:data:`RUN_FILES`) is a
    ``ValueError`` naming ``--resume`` and ``--run-name``, unless ``overwrite`` removes them
    first (:func:`~dragons_egg.experiments.common.runs.claim_run_dir`). A Ctrl-C saves the
    checkpoint of the last finished update and raises
    :class:`~dragons_egg.experiments.common.runs.RunInterrupted`."""
    return SB3Run(cfg, resume, trust, overwrite, callbacks).train()


def _next(now: int, every: int) -> int:
    return 0 if not every else (now // every + 1) * every


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line (``dragons-egg train-sb3``, or this module run with ``python -m``);
    ``prog`` is the command named in help, errors and the line that says how to resume."""
    prog = prog or module_prog(TrainConfig) or "python -m " + __name__
    require_cli(prog, "train")  # before parsing: tyro parses, SB3 trains
    cmd = parse_args(argv, prog)
    return SB3Run.command(prog, lambda: SB3Run(cmd.cfg, cmd.resume, cmd.trust, cmd.overwrite))


if __name__ == "__main__":
    raise SystemExit(main())
