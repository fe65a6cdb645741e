"""Write a self-play checkpoint (or any ``.npz`` policy file) as a policy file with its
provenance: to a file of your own, or, for maintainers, as the package's ``ppo`` agent.

``python -m dragons_egg.experiments.training.ship CHECKPOINT.pt|POLICY.npz --dest FILE.npz
[--command "the command that trained it"] [--note "..."]``

``python -m dragons_egg.experiments.training.ship CHECKPOINT.pt|POLICY.npz --into-package
[--command ...] [--note ...]`` replaces the package's shipped ``ppo`` agent
(``agents/data/ppo_dragons_egg.npz``, inside site-packages in an installed package): only
with this flag, never by default. One of ``--dest`` and ``--into-package`` is required; without
either the command stops with a one-line error (exit status 2) before doing anything.

Writes the checkpoint's policy as an :mod:`dragons_egg.agents.netpolicy` file and its
provenance (the command, samples, training seconds, config, the run's settings changes and
evaluations) into the file's metadata and a ``.json`` beside it, which the README and the
tests read. A policy file (a league snapshot of a run, ``policies/snapshot_*.npz``) is
shipped as it is, with the provenance it carries. The ``ppo:path=FILE.npz`` agent plays the
result.

Nothing is shipped that does not load cleanly: a policy file is read as every policy file is
(numbers only, headers checked before the arrays are read, its digest where it records one), a
checkpoint with ``torch.load(weights_only=True)`` after the CRC-32 of its zip members, then its
digest (:func:`dragons_egg.experiments.training.checkpoint.load_checkpoint`); weights that are not
finite
(NaN, infinity) are refused, with a one-line error naming the file. A checkpoint of the old
format (pickled objects, which run code when loaded) is read only with ``--trust-checkpoint``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dragons_egg.agents.ppo import SHIPPED
from dragons_egg_env.extras import require_cli

#: The command that trains the shipped agent (README, docs/training.md): the recorded
#: command of ``--into-package`` unless ``--command`` says otherwise.
SHIPPED_COMMAND = "python -m dragons_egg.experiments.training.selfplay --config selfplay-shipped"


def is_policy_file(path: str) -> bool:
    """Whether ``path`` is an :mod:`dragons_egg.agents.netpolicy` file (read by
    :func:`dragons_egg.agents.ppo.checkpoint_format`); anything else is taken for a torch
    checkpoint, and reading it reports what is wrong with it (missing, corrupt, not one)."""
    from dragons_egg.agents.ppo import CheckpointError, checkpoint_format

    try:
        return checkpoint_format(path) == "net"
    except CheckpointError:
        return False


def ship_policy_file(path: str | Path, dest: str | Path, command: str = "",
                     note: str = "") -> Path:
    """Copy a policy file to ``dest`` with its provenance (the file's own: samples, updates,
    seconds, config) plus ``command``, ``note`` and where it came from, in the file and in a
    ``.json`` beside it."""
    from dragons_egg.agents.netpolicy import PolicyFileError, load_policy_file

    try:
        policy = load_policy_file(path)
    except PolicyFileError as exc:
        raise ValueError(str(exc)) from None
    prov = {**policy.meta.get("provenance", {}), "command": command, "note": note,
            "checkpoint": str(path)}
    policy.meta = {**policy.meta, "provenance": prov}
    dest = policy.save(dest)
    dest.with_suffix(".json").write_text(json.dumps(prov, indent=1) + "\n")
    return dest


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog or "python -m dragons_egg.experiments.training.ship",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", help="a self-play checkpoint (checkpoints/latest.pt) or a "
                   "policy file (.npz) such as a run's snapshot")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--dest", help="the policy file to write (FILE.npz; FILE.json beside "
                       "it); the ppo:path=FILE.npz agent plays it")
    where.add_argument("--into-package", action="store_true",
                       help=f"for maintainers: replace the package's shipped ppo agent "
                       f"({SHIPPED}, with its .json)")
    p.add_argument("--command", default=None,
                   help="the command that trained it, recorded as provenance (default: with "
                   "--into-package the shipped agent's, "
                   f"{SHIPPED_COMMAND!r}; else none)")
    p.add_argument("--note", default="",
                   help="anything the provenance should say besides the command (how the run "
                   "was stopped and resumed, settings changed on the way)")
    p.add_argument("--trust-checkpoint", action="store_true",
                   help="for a self-play checkpoint of the old format: load a checkpoint written "
                   "before checkpoints held only tensors and plain data; reading one unpickles "
                   "Python objects, which runs any code stored in the file, so give it only "
                   "for a checkpoint from a source you trust (a warning names it)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --dest file (and its .json); without it, one is "
                   "an error")
    args = p.parse_args(argv)
    if not args.into_package and args.dest is None:
        p.error("say where to write the policy: --dest FILE.npz, or --into-package to "
                "replace the package's shipped ppo agent")
    dest = SHIPPED if args.into_package else Path(args.dest)
    if not args.into_package and not args.overwrite:
        held = [str(f) for f in (dest, dest.with_suffix(".json")) if f.exists()]
        if held:
            p.error(f"--dest {args.dest}: {' and '.join(held)} exist: give another --dest, or "
                    "--overwrite to replace them")
    command = args.command if args.command is not None else (
        SHIPPED_COMMAND if args.into_package else "")
    if not is_policy_file(args.checkpoint):  # a torch checkpoint
        require_cli(p.prog, "train", only=("torch",))
    from dragons_egg.experiments.training.selfplay import export_checkpoint

    try:
        if is_policy_file(args.checkpoint):
            dest = ship_policy_file(args.checkpoint, dest, command, args.note)
        else:
            dest = export_checkpoint(args.checkpoint, dest, command, args.note,
                                     trust=args.trust_checkpoint)
    except ValueError as exc:
        p.error(str(exc))
    print(f"wrote {dest} and {dest.with_suffix('.json')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
