"""A policy file records the rules it was trained under (``meta["rules"]``); the agents built on
a policy file (``ppo``, ``net``, ``ismcts-net``) warn once when they play under other rules, an
option silences it, and a bad record is refused by name."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from support import small_policy

from dragons_egg.agents import AgentSpecError, check_spec_for_table, make_agent, parse_spec
from dragons_egg.agents.netpolicy import (
    RULE_FLAGS,
    NetPolicy,
    PolicyFileError,
    check_policy_rules,
    load_policy_file,
)
from dragons_egg.agents.ppo import (
    CheckpointError,
    PPOAgent,
    RulesMismatchWarning,
    net_policy,
    warn_rules_mismatch,
)
from dragons_egg.agents.runner import play_match
from dragons_egg_env.config import RulesConfig

#: The default rules as a policy file records them (no num_players).
DEFAULT = {k: v for k, v in RulesConfig().to_dict().items() if k != "num_players"}
#: A variant: pass locks out (R10), no tribute asks (R31) and two rounds (R26).
VARIANT = {**DEFAULT, "pass_locks_out": True, "tribute_asks": 0, "num_rounds": 2}


def _variant_file(tmp_path: Path, rules: dict | None, name: str = "variant.npz") -> Path:
    """A small policy file (the tests' helper) whose meta records ``rules`` (None: no
    record, as every file written before the record)."""
    plain = load_policy_file(small_policy(tmp_path / f"plain-{name}"))
    meta = dict(plain.meta)
    if rules is not None:
        meta["rules"] = rules
    return NetPolicy(plain.layers, plain.pi, plain.v, meta).save(tmp_path / name)


def _mismatches(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RulesMismatchWarning)]


def _play(specs: list[str], config: RulesConfig, seeds=(0, 1)) -> list[str]:
    """The rules warnings of matches (one agent object per seat, kept across the matches)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agents = [make_agent(s, seed=k) for k, s in enumerate(specs)]
        for seed in seeds:
            play_match(agents, config, seed=seed)
    return _mismatches(caught)


def test_the_record_reads_back_and_a_file_without_one_has_the_default_rules(tmp_path):
    variant = load_policy_file(_variant_file(tmp_path, VARIANT))
    assert variant.rules == VARIANT and variant.meta["rules"] == VARIANT
    old = load_policy_file(_variant_file(tmp_path, None, "old.npz"))
    assert "rules" not in old.meta and old.rules == DEFAULT
    assert tuple(old.rules) == RULE_FLAGS
    # a record naming some flags: the others have their defaults
    partial = load_policy_file(_variant_file(tmp_path, {"pass_locks_out": True}, "part.npz"))
    assert partial.rules == {**DEFAULT, "pass_locks_out": True}
    game = RulesConfig(num_players=3, pass_locks_out=True, num_rounds=2)
    assert variant.rule_differences(game) == [("tribute_asks", 0, 2)]
    assert old.rule_differences(RulesConfig(num_players=5)) == []  # the table size is no flag


@pytest.mark.parametrize("rules, needle", [
    ({"pass_lock_out": True}, "unknown rule flag 'pass_lock_out'"),
    ({"num_players": 4}, "names num_players"),
    ({"tribute_asks": 99}, "tribute_asks must be 0..44, got 99"),
    ({"pass_locks_out": "yes"}, "pass_locks_out must be a bool, got 'yes'"),
    ({"num_rounds": 2.0}, "num_rounds must be an int, got 2.0"),
    ({"reward_scheme": "elo"}, "reward_scheme must be one of rank, dragon_egg; got 'elo'"),
    (["pass_locks_out"], "its rules record is list"),
])
def test_a_bad_rules_record_is_refused_by_name_in_one_line(tmp_path, rules, needle):
    # written as the trainer would (the digest matches): the record itself is what is bad
    plain = load_policy_file(small_policy(tmp_path / "plain.npz"))
    path = NetPolicy(plain.layers, plain.pi, plain.v, dict(plain.meta)).save(tmp_path / "p.npz")
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays["meta"]).decode())
    meta["rules"] = rules
    meta.pop("digest")  # a file without a digest loads unchecked: the record is checked still
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez_compressed(path, **arrays)
    with pytest.raises(PolicyFileError) as exc:
        load_policy_file(path)
    msg = str(exc.value)
    assert needle in msg and str(path) in msg and "\n" not in msg, msg
    with pytest.raises(AgentSpecError, match="rules record"):  # when the spec is read
        parse_spec(f"ppo:path={path}")
    with pytest.raises(ValueError, match="rules record"):  # and in memory
        check_policy_rules(rules)


def test_ppo_warns_once_naming_each_flag_and_plays_on(tmp_path):
    path = _variant_file(tmp_path, VARIANT)
    config = RulesConfig(num_players=3, num_rounds=1)  # the default flags, one round
    messages = _play([f"ppo:path={path}"] * 2 + ["heuristic"], config)
    assert len(messages) == 1, messages  # two agents, two matches: one warning
    (msg,) = messages
    assert str(path) in msg and "\n" not in msg
    for flag, mine, theirs in (("pass_locks_out", True, False), ("tribute_asks", 0, 2),
                               ("num_rounds", 2, 1)):
        assert f"{flag}: policy {mine!r}, game {theirs!r}" in msg
    assert "egg_in_tribute" not in msg  # a flag that agrees is not named
    assert "rules_mismatch=ignore" in msg
    # other differences of the same file are a new warning (once again)
    other = _play([f"ppo:path={path}", "heuristic", "heuristic"],
                  RulesConfig(num_players=3, num_rounds=2, pass_locks_out=True))
    assert len(other) == 1 and "tribute_asks: policy 0, game 2" in other[0]
    assert "pass_locks_out" not in other[0] and "num_rounds" not in other[0]


def test_its_own_rules_and_the_silencing_option_do_not_warn(tmp_path):
    path = _variant_file(tmp_path, VARIANT)
    own = RulesConfig(num_players=3, **VARIANT)
    assert _play([f"ppo:path={path}", f"net:path={path}", "heuristic"], own) == []
    other = RulesConfig(num_players=3, num_rounds=1)
    assert _play([f"ppo:path={path},rules_mismatch=ignore",
                  f"net:path={path},rules_mismatch=ignore",
                  f"ismcts-net:path={path},iterations=4,rules_mismatch=ignore"], other) == []
    bot = PPOAgent(seed=0, path=str(path), rules_mismatch="ignore")  # the constructor's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bot.start_match(0, other, 3)
    assert _mismatches(caught) == []
    # the old files, the shipped policy among them, play the default rules silently
    old = _variant_file(tmp_path, None, "old.npz")
    assert _play([f"ppo:path={old}", "ppo", "heuristic"], RulesConfig(num_players=3),
                 seeds=(0,)) == []


@pytest.mark.parametrize("spec", ["net:path={p}", "ismcts-net:path={p},iterations=4"])
def test_the_other_agents_on_a_policy_file_warn_too(tmp_path, spec):
    path = _variant_file(tmp_path, VARIANT, f"{spec[:3]}.npz")
    messages = _play([spec.format(p=path), "heuristic", "heuristic"],
                     RulesConfig(num_players=3, num_rounds=2, tribute_asks=0))
    assert len(messages) == 1 and "pass_locks_out: policy True, game False" in messages[0]


def test_a_bad_option_value_is_refused_and_table_sizes_stay_refused(tmp_path):
    path = _variant_file(tmp_path, VARIANT)
    for spec in (f"ppo:path={path},rules_mismatch=quiet",
                 f"ismcts-net:path={path},rules_mismatch=quiet"):
        with pytest.raises(AgentSpecError, match="rules_mismatch is one of warn, ignore, "
                                                 "got 'quiet'"):
            parse_spec(spec)
    with pytest.raises(ValueError, match="rules_mismatch is one of warn, ignore"):
        PPOAgent(seed=0, path=str(path), rules_mismatch="off")
    # a table larger than the policy's stays refused, with the rules ignored or not
    four = _four_seat_file(tmp_path)
    for mode in ("warn", "ignore"):
        bot = PPOAgent(seed=0, path=str(four), rules_mismatch=mode)
        with pytest.raises(CheckpointError, match="cannot play a table of 5"):
            bot.start_match(0, RulesConfig(num_players=5))
    with pytest.raises(AgentSpecError, match="plays tables of up to 4 players"):
        check_spec_for_table(f"ppo:path={four},rules_mismatch=ignore", 5)


def _four_seat_file(tmp_path: Path) -> Path:
    from dragons_egg_env.actions import NUM_ACTIONS
    from dragons_egg_env.observation import layout

    rng = np.random.default_rng(0)
    size = layout(4).size
    w = [rng.normal(size=s).astype(np.float32) for s in
         ((size, 8), (8,), (8, NUM_ACTIONS), (NUM_ACTIONS,), (8, 1), (1,))]
    return NetPolicy([(w[0], w[1])], (w[2], w[3]), (w[4], w[5]),
                     {"max_players": 4, "rules": VARIANT}).save(tmp_path / "four.npz")


def test_warn_rules_mismatch_returns_the_differences(tmp_path):
    path = _variant_file(tmp_path, VARIANT)
    net = net_policy(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = warn_rules_mismatch(path, net, RulesConfig(**VARIANT), "ignore")
        assert got == []
        got = warn_rules_mismatch(path, net, RulesConfig(), "ignore")
    assert got == [("num_rounds", 2, 3), ("pass_locks_out", True, False),
                   ("tribute_asks", 0, 2)]
    assert _mismatches(caught) == []
