"""Make a self-play checkpoint the package's ``ppo`` agent (or any ``.npz`` policy file).

``python -m dragons_egg.experiments.ship CHECKPOINT.pt|POLICY.npz [--dest
agents/data/ppo_dragons_egg.npz]
[--command "the command that trained it"]``

Writes the checkpoint's policy as an :mod:`dragons_egg.agents.netpolicy` file and its provenance
(the
command, samples, training seconds, config and evaluations) into the file's metadata and a
``.json`` beside it, which the README and the tests read. A policy file (a league snapshot of
a run, ``policies/snapshot_*.npz``) is shipped as it is, with the provenance it carries.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dragons_egg.agents.ppo import SHIPPED

#: The command that trains the shipped agent (README, docs/training.md).
SHIPPED_COMMAND = ("python -m dragons_egg.experiments.selfplay --config "
                   "experiments/configs/selfplay-shipped.json")


def is_policy_file(path: str) -> bool:
    """Whether ``path`` is an :mod:`dragons_egg.agents.netpolicy` file (read by
    :func:`dragons_egg.agents.ppo.checkpoint_format`); anything else is taken for a torch
    checkpoint, and
    reading it reports what is wrong with it (missing, corrupt, not one)."""
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dragons_egg.experiments.ship",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", help="a self-play checkpoint (checkpoints/latest.pt) or a "
                   "policy file (.npz) such as a run's snapshot")
    p.add_argument("--dest", default=str(SHIPPED), help=f"policy file to write (default "
                   f"{SHIPPED.name} in the package)")
    p.add_argument("--command", default=SHIPPED_COMMAND,
                   help="the command that trained it, recorded as provenance")
    p.add_argument("--note", default="",
                   help="anything the provenance should say besides the command (how the run "
                   "was stopped and resumed, settings changed on the way)")
    args = p.parse_args(argv)
    from .selfplay import export_checkpoint

    try:
        if is_policy_file(args.checkpoint):
            dest = ship_policy_file(args.checkpoint, args.dest, args.command, args.note)
        else:
            dest = export_checkpoint(args.checkpoint, args.dest, args.command, args.note)
    except ValueError as exc:
        p.error(str(exc))
    print(f"wrote {dest} and {dest.with_suffix('.json')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
