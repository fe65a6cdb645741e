"""The schema of a tournament's per-match line (``results.jsonl``), checked before any work.

Every line a reader takes (a ``--resume``, a report, a comparison of two tournaments) is read
against :class:`~.record_schema.MatchLine` first, with pydantic: the JSON itself (at most
:data:`MAX_DEPTH` levels deep, so that no crafted nesting can exhaust the interpreter), the
type of every field, finite numbers within their bounds, one entry per seat in ``scores``,
``think`` and ``choices``, rounds whose finishing order is a permutation of the seats and
whose rewards sum to zero, and scores that are the sums of the rounds' rewards (so they sum
to zero too). A line that fails is refused by file and line number, with the field and what
is wrong, before any match is played.

Each line written since this check carries ``digest``: the SHA-256 (:func:`line_digest`) of
the rest of the line. A reader recomputes it, so a line changed after it was written (a flipped
bit, an edited score) is refused by line. The digest detects damage, not forgery: anyone can
compute it for a line they wrote. Lines of a file written before digests have none; a line
without a digest after one with a digest is refused (a digest was removed).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

#: How deep a line's JSON may nest (a forfeit's replay is the deepest part a line holds).
MAX_DEPTH = 64

def line_digest(record: dict[str, Any]) -> str:
    """``"sha256:<hex>"`` of a line's content but its ``digest`` (canonical JSON: sorted
    keys, no spaces)."""
    body = {k: v for k, v in record.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def depth_ok(line: bytes) -> bool:
    """Whether the JSON text nests at most :data:`MAX_DEPTH` deep (brackets outside strings
    counted; cheap, and before any parser sees it)."""
    depth = 0
    in_str = escaped = False
    for b in line:
        if in_str:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in (0x7B, 0x5B):
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif b in (0x7D, 0x5D):
            depth -= 1
    return True


class RecordError(ValueError):
    """A per-match line that is not a valid match record (the message names it)."""


def _why(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]


def check_record(line: bytes, where: str, model: Any, what: str) -> dict[str, Any]:
    """One JSON line checked against the pydantic ``model`` (after :func:`depth_ok`) and its
    ``digest`` (when it has one), as the dict it holds; a :class:`RecordError` starting with
    ``where`` (the file and line) and naming what is wrong (``what``: the kind of record)."""
    from pydantic import ValidationError

    if not depth_ok(line):
        raise RecordError(f"{where} nests deeper than {MAX_DEPTH} levels: not {what}")
    try:
        model.model_validate_json(line)
    except ValidationError as exc:
        raise RecordError(f"{where} is not {what} ({_why(exc)})") from None
    record: dict[str, Any] = json.loads(line)
    digest = record.get("digest")
    if digest is not None and digest != line_digest(record):
        raise RecordError(f"{where} is damaged or was edited after it was written: its digest "
                          "does not match its content")
    return record


def parse_line(line: bytes, where: str) -> dict[str, Any]:
    """One per-match line, checked against :class:`~.record_schema.MatchLine` and its
    ``digest`` (:func:`check_record`)."""
    from .record_schema import MatchLine

    return check_record(line, where, MatchLine, "a valid match record")


class DigestChain:
    """The lines of one file in order: once a line carries a digest, every later one must
    (:meth:`check` refuses one without, whose digest was removed)."""

    def __init__(self) -> None:
        #: The number of the first line with a digest (0: none yet).
        self.first = 0

    def check(self, record: dict[str, Any], number: int, where: str) -> None:
        if record.get("digest") is not None:
            self.first = self.first or number
        elif self.first:
            raise RecordError(f"{where} has no digest, while line {self.first} has one: a "
                              "digest was removed, or lines of two runs were mixed")


__all__ = ["MAX_DEPTH", "DigestChain", "RecordError", "check_record", "depth_ok",
           "line_digest", "parse_line"]
