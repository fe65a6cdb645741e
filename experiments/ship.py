"""Make a self-play checkpoint the package's ``ppo`` agent (or any ``.npz`` policy file).

``python -m experiments.ship CHECKPOINT.pt [--dest agents/data/ppo_dragons_egg.npz]
[--command "the command that trained it"]``

Writes the checkpoint's policy as an :mod:`agents.netpolicy` file and its provenance (the
command, samples, training seconds, config and evaluations) into the file's metadata and a
``.json`` beside it, which the README and the tests read.
"""

from __future__ import annotations

import argparse
import sys

from agents.ppo import SHIPPED

#: The command that trains the shipped agent (README, docs/training.md).
SHIPPED_COMMAND = ("python -m experiments.selfplay --config "
                   "experiments/configs/selfplay-shipped.json")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.ship",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", help="a self-play checkpoint (checkpoints/latest.pt)")
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
        dest = export_checkpoint(args.checkpoint, args.dest, args.command, args.note)
    except ValueError as exc:
        p.error(str(exc))
    print(f"wrote {dest} and {dest.with_suffix('.json')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
