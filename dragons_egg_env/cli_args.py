"""Argument types shared by the project's command lines (clear argparse errors)."""

from __future__ import annotations

import argparse
from typing import Any, Callable


def int_range(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer ``>= lo`` (and ``<= hi`` when given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(
                f"expected {lo}..{hi}, got {value}" if hi is not None
                else f"expected >= {lo}, got {value}")
        return value
    return parse


def rule_flag(text: str) -> tuple[str, Any]:
    """An argparse type for ``--rule NAME=VALUE`` (true/false, integers, else a string)."""
    key, eq, value = text.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"a rule flag is name=value, got {text!r}")
    low = value.lower()
    if low in ("true", "false"):
        return key, low == "true"
    try:
        return key, int(value)
    except ValueError:
        return key, value
