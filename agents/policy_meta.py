"""The schema of a policy file's ``meta`` record (:mod:`.netpolicy` reads every one against
:class:`PolicyMeta`, with pydantic, before it reads any weight).

The JSON itself is parsed by pydantic's parser, which refuses nesting past its recursion
limit with an error (a ``meta`` nested 200,000 levels deep gave a ``RecursionError`` before);
the settings the loader uses are typed and bounded (``max_players`` an integer table size: a
``1e999`` gave an ``OverflowError``); the rest (``provenance``, the training run's record) is
kept as it is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: The format a policy file's ``meta`` names.
FORMAT = "dragons-egg-policy"


class PolicyMeta(BaseModel):
    """What the loader reads of ``meta``; other keys are kept unchecked."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    format: Literal["dragons-egg-policy"]
    version: Annotated[int, Field(ge=1, le=5)]
    max_players: Annotated[int, Field(ge=2, le=8)]
    obs_size: Annotated[int, Field(ge=1)] | None = None
    num_actions: Annotated[int, Field(ge=1)] | None = None
    hidden: list[Annotated[int, Field(ge=1)]] | None = None
    activation: Literal["tanh", "relu"] = "tanh"
    heads: list[str] | None = None
    rules: dict[str, bool | int | float | str] | None = None
    provenance: dict[str, Any] | None = None
    digest: str | None = None


def parse_meta(text: bytes) -> Any:
    """The JSON of a ``meta`` record as Python values, parsed by pydantic's parser (a
    ``ValueError`` past its recursion limit or for text that is not JSON, never a
    ``RecursionError``)."""
    from pydantic_core import from_json

    return from_json(text)


def check_meta(meta: dict[str, Any]) -> None:
    """A ``ValueError`` naming the first field of ``meta`` that :class:`PolicyMeta`
    refuses."""
    try:
        PolicyMeta.model_validate(meta)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"{loc + ': ' if loc else ''}{err['msg']}") from None


__all__ = ["FORMAT", "PolicyMeta", "check_meta", "parse_meta"]
