"""The env factories list their keyword arguments (from ``RulesConfig``'s fields) for
``help()``, ``inspect.signature`` and type checkers; round_index is 0-based, round_number
1-based as the render shows it."""

from __future__ import annotations

import dataclasses
import inspect
import pydoc
import random
import typing

import pytest

from dragons_egg_env import dragons_egg_v0
from dragons_egg_env.cards import DECK_STYLES
from dragons_egg_env.config import RulesConfig

OWN = {"render_mode": None, "max_players": None, "deck_style": "dragon"}


def _flag_type(name: str) -> object:
    info = RulesConfig.flag_info(name)
    if info["kind"] == "str":
        return typing.Literal[info["choices"]]
    return {"bool": bool, "int": int}[info["kind"]]


@pytest.mark.parametrize("factory", [dragons_egg_v0.env, dragons_egg_v0.raw_env])
def test_signature_lists_every_rule_flag_with_its_type_and_default(factory):
    params = inspect.signature(factory).parameters
    fields = dataclasses.fields(RulesConfig)
    assert [p for p in params if p not in OWN] == [f.name for f in fields]
    for f in fields:
        p = params[f.name]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY
        assert p.default == f.default and type(p.default) is type(f.default)
        assert p.annotation == _flag_type(f.name)
    for name, default in OWN.items():
        assert params[name].default == default
    assert "_terminate_illegal" not in params and "rule_flags" not in params
    assert "kwargs" not in params


def test_signatures_take_what_the_factories_take():
    # env() takes keywords only; raw_env also takes its own options by position.
    env_params = inspect.signature(dragons_egg_v0.env).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in env_params.values())
    raw = inspect.signature(dragons_egg_v0.raw_env)
    assert list(raw.parameters)[:3] == list(OWN)
    bound = raw.bind("ansi", 6, "tarokka", num_players=5)
    made = dragons_egg_v0.raw_env(*bound.args, **bound.kwargs)
    assert (made.render_mode, made.max_players, made.deck_style) == ("ansi", 6, "tarokka")
    assert made.config.num_players == 5
    sig = inspect.signature(dragons_egg_v0.env)
    defaults = {k: p.default for k, p in sig.parameters.items()}
    made = dragons_egg_v0.env(**defaults)
    assert made.config == RulesConfig() and made.max_players == RulesConfig().num_players
    with pytest.raises(TypeError):
        sig.bind(5)


def test_help_shows_every_keyword_argument():
    text = pydoc.render_doc(dragons_egg_v0.env, renderer=pydoc.plaintext)
    for f in dataclasses.fields(RulesConfig):
        assert f"{f.name}: " in text and f"= {f.default!r}" in text
    assert "num_players: int = 4" in text and "pass_locks_out: bool = False" in text
    assert "dragons_per_play: Literal['one', 'any'] = 'one'" in text
    assert "deck_style: Literal['dragon', 'tarokka'] = 'dragon'" in text
    raw = pydoc.render_doc(dragons_egg_v0.raw_env, renderer=pydoc.plaintext)
    assert "raw_env(render_mode: " in raw and "reward_scheme: Literal['rank', 'dragon_egg']" in raw


def test_env_kwargs_typed_dict_matches_rules_config():
    hints = typing.get_type_hints(dragons_egg_v0.EnvKwargs)
    fields = RulesConfig.field_names()
    assert list(hints) == [*fields, *OWN]
    for name in fields:
        assert hints[name] == _flag_type(name), name
    assert dragons_egg_v0.EnvKwargs.__required_keys__ == frozenset()
    assert list(typing.get_type_hints(dragons_egg_v0.RuleFlags)) == list(fields)
    # The env's own options: the same types as raw_env's parameters, and the allowed values.
    init = typing.get_type_hints(dragons_egg_v0.raw_env.__init__)
    for name in OWN:
        assert hints[name] == init[name], name
    assert typing.get_args(dragons_egg_v0.DeckStyle) == DECK_STYLES
    assert list(typing.get_args(dragons_egg_v0.RenderMode)) == \
        dragons_egg_v0.raw_env.metadata["render_modes"]


def test_module_docstring_names_every_rule_flag():
    doc = dragons_egg_v0.__doc__
    for name in RulesConfig.field_names():
        assert f"``{name}``" in doc, name


@pytest.mark.parametrize("num_rounds", [1, 3])
def test_round_index_counts_from_0_and_round_number_from_1(num_rounds):
    env = dragons_egg_v0.raw_env(num_players=3, num_rounds=num_rounds, render_mode="ansi")
    env.reset(seed=4)
    rng = random.Random(0)
    seen = set()
    while env.phase() != "done":
        index, number = env.round_index(), env.round_number()
        assert number == index + 1 and 0 <= index < num_rounds
        assert f"round {number}/{num_rounds}," in env.render()
        seen.add(number)
        agent = env.agent_selection
        env.step(rng.choice(env.legal_actions()))
        result = env.infos[agent].get("round_result")
        if result is not None:
            assert result["round"] == index  # the info's round is an index too
    assert seen == set(range(1, num_rounds + 1))
    assert env.round_number() == num_rounds and f"round {num_rounds}/{num_rounds}," in \
        env.render()
