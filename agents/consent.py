"""Consent to run code comes from the user, never from a file.

Some agent specs run code that is not this package's when their agent is made: ``ppo`` with
``trust=1`` loads a Stable-Baselines3 zip (SB3 unpickles its ``data``), ``rllib:path=``
restores a Ray checkpoint (pickled), and ``MODULE:CLASS`` imports a module. Typed on the
command line (or passed in Python), such a spec is the user's own choice. Read from a file
(a tournament folder's ``config.json`` on ``--resume``, a ``--config`` settings file, the
settings a checkpoint saved), it is what the file says, and a file cannot give consent: such a
spec is honoured only when the user names it again with :data:`CONSENT_FLAG` on the command
line, and is otherwise a one-line refusal naming the spec and the flag
(:func:`check_consent`). Checked on the spec's text, before the spec is parsed (parsing a
``MODULE:CLASS`` spec imports its module).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

#: The command-line option that allows one spec read from a file to run code (again for
#: more): ``--allow-code 'ppo:path=mine.zip,trust=1'``.
CONSENT_FLAG = "--allow-code"
#: The values of a boolean agent option that mean true (``trust=1``).
_TRUE = {"1", "true", "yes", "on"}


class ConsentError(ValueError):
    """A spec read from a file that would run code, without the user's consent."""


def runs_code(spec: str) -> str | None:
    """Why making the agent ``spec`` names runs code that is not this package's (one phrase),
    or ``None`` when it does not."""
    from . import available, is_builtin

    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    options = {k.strip(): v.strip() for k, _, v in
               (item.partition("=") for item in rest.split(",") if "=" in item)}
    if is_builtin(name):
        if name in ("ppo", "ppo-0.1") and options.get("trust", "").lower() in _TRUE:
            return "trust=1 loads a Stable-Baselines3 zip, whose loading runs code stored in it"
        if name == "rllib" and options.get("path"):
            return "rllib:path= restores a Ray checkpoint, whose loading runs code stored in it"
        return None
    if name in available():
        return None  # registered in this process, or an installed package's: code already chosen
    return f"MODULE:CLASS imports and runs the module {name!r}"


def check_consent(specs: Iterable[str], source: str, allowed: Collection[str] = ()) -> None:
    """A :class:`ConsentError` for the first of ``specs`` (read from ``source``, such as
    ``"the config.json of runs/t"``) that runs code (:func:`runs_code`) and is not among
    ``allowed`` (the specs given with :data:`CONSENT_FLAG`)."""
    for spec in specs:
        why = runs_code(spec)
        if why is not None and spec.strip() not in {a.strip() for a in allowed}:
            raise ConsentError(
                f"{source} names the agent {spec!r}: {why}, and a file cannot give that "
                f"consent; if you trust it, allow it on the command line with "
                f"{CONSENT_FLAG} '{spec}'")


__all__ = ["CONSENT_FLAG", "ConsentError", "check_consent", "runs_code"]
