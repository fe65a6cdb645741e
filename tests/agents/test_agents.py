"""Agents: the registry, legal play, the documented heuristic rules, and the ISMCTS sampler."""

import random

import numpy as np
import pytest
from support import random_states, shuffled_hidden

from dragons_egg.agents import (
    AgentSpecError,
    available,
    check_spec_for_table,
    make_agent,
    parse_spec,
    table_limit,
)
from dragons_egg.agents.heuristic import HeuristicAgent, strongest_ask, weakest_give
from dragons_egg.agents.runner import play_match
from dragons_egg.agents.sampling import sample_world
from dragons_egg_env import actions as A
from dragons_egg_env import dragons_egg_v0
from dragons_egg_env import engine as E
from dragons_egg_env.cards import ALL_CARDS, EGG_BIT, iter_cards, mask_of
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import Encoder, decode_observation


def test_registry_names_and_specs():
    assert {"random", "greedy", "heuristic", "ismcts"} <= set(available())
    assert parse_spec("ismcts:iterations=400,c=1.5") == ("ismcts", {"iterations": 400, "c": 1.5})
    bot = make_agent("ismcts:iterations=7", seed=3)
    assert bot.iterations == 7 and bot.label == "ismcts:iterations=7"


@pytest.mark.parametrize("spec,needle", [
    ("alphazero", "unknown agent 'alphazero'; available: greedy, heuristic, ismcts, ismcts-net, net, "
                  "openspiel-ismcts, ppo, "
                  "ppo-0.1, random, rllib \\(or MODULE:CLASS for an agent class of your own\\)"),
    ("ismcts:iters=3", "unknown option 'iters'; options: iterations, time, c, rollout"),
    ("ismcts:iterations=many", "option iterations expects int"),
    ("ismcts:iterations", "must be key=value"),
    ("ismcts:iterations=0", "iterations must be an integer >= 1"),
    ("ismcts:iterations=-5", "ismcts: iterations must be an integer >= 1, got -5"),
    ("ismcts:time=-1", "time must be in 0..3600 seconds"),
    ("ismcts:time=nan", "time must be in 0..3600 seconds, got nan"),
    ("ismcts:c=-0.5", "c must be a number >= 0"),
    ("ismcts:epsilon=2", "epsilon must be in \\[0, 1\\]"),
    ("ismcts:rollout=smart", "rollout must be one of heuristic, greedy, random"),
    ("ppo:path=/nope.zip", "ppo: checkpoint /nope.zip does not exist"),
    ("ppo:deterministic=maybe", "option deterministic expects true/false"),
    ("rllib:path=/nope", "rllib: exported module folder /nope does not exist"),
    ("rllib", "rllib: path is required"),
    ("", "non-empty string"),
])
def test_bad_agent_specs(spec, needle):
    with pytest.raises(AgentSpecError, match=needle):
        make_agent(spec, seed=0)
    with pytest.raises(AgentSpecError, match=needle) as exc:
        parse_spec(spec)  # found when the spec is read, before any agent is built
    assert "\n" not in str(exc.value)


def _sb3_like_zip(path, data=None, extra=()):
    """A zip shaped like an SB3 checkpoint (its ``data`` entry), without any weights."""
    import json
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        if data is not None:
            z.writestr("data", json.dumps(data))
        for name, content in extra:
            z.writestr(name, content)
    return path


def test_checkpoint_paths_are_checked_when_the_spec_is_read(tmp_path):
    """Without loading torch: a directory, a text file, a zip that is not SB3's, an
    observation size no table has."""
    from dragons_egg_env.observation import layout

    text = tmp_path / "notes.zip"
    text.write_text("not a zip")
    cases = {
        str(tmp_path): "is a directory, not a checkpoint file",
        str(text): "is corrupt or not an SB3 zip file",
        str(_sb3_like_zip(tmp_path / "other.zip", extra=[("x", "y")])):
            "is a zip file but not an SB3 checkpoint",
        str(_sb3_like_zip(tmp_path / "odd.zip", {"observation_space": {"_shape": [12]}})):
            "expects observations of 12 values, which no Dragon's Egg table produces",
        str(_sb3_like_zip(tmp_path / "bad.zip", {"observation_space": {"_shape": "x"}})):
            "is corrupt",
    }
    for path, needle in cases.items():
        with pytest.raises(AgentSpecError) as exc:
            parse_spec(f"ppo:path={path}")
        assert needle in str(exc.value), (path, str(exc.value))
    six = _sb3_like_zip(tmp_path / "six.zip",
                        {"observation_space": {"_shape": [layout(6).size]}})
    with pytest.raises(AgentSpecError, match="runs code stored in it"):
        parse_spec(f"ppo:path={six}")  # an SB3 zip is played only when trusted
    assert parse_spec(f"ppo:path={six},trust=1") == ("ppo", {"path": str(six), "trust": True})
    assert table_limit(f"ppo:path={six},trust=1") == 6


def test_a_checkpoint_that_passes_the_checks_but_does_not_load_is_one_line(tmp_path):
    import zipfile

    from dragons_egg.agents.ppo import PREVIOUS

    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(PREVIOUS) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, b"garbage" if item.filename == "policy.pth"
                         else src.read(item.filename))
    parse_spec(f"ppo:path={broken},trust=1")  # its data entry is fine
    with pytest.raises(AgentSpecError) as exc:
        make_agent(f"ppo:path={broken},trust=1", seed=0)
    assert f"ppo:path={broken},trust=1: checkpoint {broken} could not be loaded" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_table_size_limits():
    """The shipped ppo agent plays every table size; the previous one (SB3, trained at 4
    players) plays tables of up to 4."""
    from dragons_egg.agents.ppo import PREVIOUS

    assert table_limit("ppo") == 8
    assert table_limit("heuristic") is None and table_limit("ismcts:iterations=5") is None
    for n in range(2, 9):
        check_spec_for_table("ppo", n)
    check_spec_for_table("heuristic", 8)
    old = f"ppo:path={PREVIOUS}"
    assert table_limit(old) == 4
    check_spec_for_table(old, 4)
    with pytest.raises(AgentSpecError, match=r"plays tables of up to 4 players \(the size "
                                             r"its policy was trained for\), not 5$"):
        check_spec_for_table(old, 5)
    with pytest.raises(AgentSpecError, match="unknown agent"):
        check_spec_for_table("nobody", 4)


def test_ppo_reads_a_policy_file_of_any_name_but_sb3_only_from_a_zip(tmp_path):
    """A policy file is read with numpy (no code) whatever its name; an SB3 zip only from a
    .zip name: one named .npz is refused, trusted or not, and never reaches SB3."""
    import shutil

    from dragons_egg.agents.ppo import (
        PREVIOUS,
        SHIPPED,
        CheckpointError,
        PPOAgent,
        checkpoint_format,
    )

    net = shutil.copy(SHIPPED, tmp_path / "policy.zip")
    sb3 = shutil.copy(PREVIOUS, tmp_path / "policy.zip.zip")
    assert checkpoint_format(net) == "net" and checkpoint_format(sb3) == "sb3"
    assert checkpoint_format("") == "net"
    assert table_limit(f"ppo:path={net}") == 8 and table_limit(f"ppo:path={sb3}") == 4
    a, b = PPOAgent(seed=0, path=str(net)), PPOAgent(seed=0)
    assert a.format == b.format == "net" and a.policy_players == b.policy_players == 8
    assert PPOAgent(seed=0, path=str(sb3)).format == "sb3"  # the shipped bytes: no trust
    disguised = shutil.copy(PREVIOUS, tmp_path / "policy.npz")
    with pytest.raises(CheckpointError, match="named .npz .* but holds a Stable-Baselines3"):
        checkpoint_format(disguised)
    for spec in (f"ppo:path={disguised}", f"ppo:path={disguised},trust=1"):
        with pytest.raises(AgentSpecError, match="it is not loaded from a .npz name"):
            make_agent(spec, seed=0)
    other = shutil.copy(PREVIOUS, tmp_path / "policy.bin")
    with pytest.raises(AgentSpecError, match=r"neither a policy file \(.npz\) nor a "
                                             r"Stable-Baselines3 checkpoint \(.zip\)$"):
        parse_spec(f"ppo:path={other},trust=1")


def test_reading_specs_loads_neither_torch_nor_ray(tmp_path):
    import subprocess
    import sys

    code = ("import sys\nfrom dragons_egg import agents\n"
            "agents.parse_spec('ppo'); agents.check_spec_for_table('ppo', 3)\n"
            "agents.parse_spec('ismcts:iterations=9')\n"
            "for bad in ('ppo:path=/nope.zip', 'rllib:path=/nope'):\n"
            "    try: agents.parse_spec(bad)\n"
            "    except agents.AgentSpecError: pass\n"
            "heavy = [m for m in ('torch', 'ray', 'sb3_contrib', 'stable_baselines3') "
            "if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


@pytest.mark.parametrize("spec", ["random", "greedy", "heuristic", "ismcts:iterations=20"])
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_agents_play_only_legal_moves(spec, n):
    # raw_env raises on any illegal move, so finishing the match is the check.
    flags = {"tribute_asks": 3, "egg_in_tribute": True} if n == 5 else {}
    config = RulesConfig(num_players=n, num_rounds=2, **flags)
    agents = [make_agent(spec, seed=k) for k in range(n)]
    rec = play_match(agents, config, seed=n)
    assert len(rec.rounds) == 2 and abs(sum(rec.scores)) < 1e-9


def test_same_seed_same_agent_choices():
    config = RulesConfig(num_players=4, num_rounds=1)
    runs = [play_match([make_agent("ismcts:iterations=30", seed=k) for k in range(4)], config,
                       seed=9, keep_replay=True).replay["actions"] for _ in range(2)]
    assert runs[0] == runs[1]


def test_act_batch_is_for_memoryless_agents_and_matches_act():
    """The default ``act_batch`` is ``act`` row by row (a seeded random agent draws the same
    choices); an agent with memory refuses it."""
    env_obs, masks = [], []
    env = dragons_egg_v0.raw_env(num_players=3)
    env.reset(seed=4)
    for _agent in env.agent_iter(max_iter=40):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            break
        env_obs.append(obs["observation"])
        masks.append(obs["action_mask"])
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    one, two = make_agent("random", seed=5), make_agent("random", seed=5)
    for a in (one, two):
        a.start_match(0, env.config)
    rows = [two.act(o, m) for o, m in zip(env_obs, masks, strict=True)]
    np.testing.assert_array_equal(one.act_batch(np.stack(env_obs), np.stack(masks)), rows)
    with pytest.raises(TypeError, match="memoryless"):
        make_agent("ismcts:iterations=5", seed=0).act_batch(np.stack(env_obs), np.stack(masks))


def _deal(seat0: str, seat1: str) -> list[list[str]]:
    from dragons_egg_env.cards import codes
    used = mask_of((seat0 + " " + seat1).split())
    return [seat0.split(), seat1.split(), codes(ALL_CARDS & ~used)]


def _heuristic_choice(env, agent):
    bot = HeuristicAgent(seed=0)
    bot.start_match(env.agent_name_mapping[agent], env.config)
    obs = env.observe(agent)
    return bot.act(obs["observation"], obs["action_mask"])


def test_heuristic_h1_completes_a_set_out_of_turn():
    env = dragons_egg_v0.raw_env(num_players=3, num_rounds=1)
    env.reset(seed=0, options={"deals": [_deal("10F 7E 7F 7L 1E", "7W 5E 10E")]})
    env.step(A.play(10, 1))     # player_0 opens
    env.step(A.play(7, 1))      # player_1 plays 7W: player_0 holds the other three 7s
    assert env.phase() == "complete" and env.agent_selection == "player_0"
    assert _heuristic_choice(env, "player_0") == A.play(7, 3)


def test_heuristic_h2_egg_holder_clears_with_a_dragon():
    env = dragons_egg_v0.raw_env(num_players=3, num_rounds=1)
    env.reset(seed=0, options={"deals": [_deal("10F 9E BEAST EGG", "5E 5W 10E")]})
    env.step(A.play(10, 1))
    env.step(A.play(5, 1))
    env.step(A.PASS)
    assert env.agent_selection == "player_0"
    assert _heuristic_choice(env, "player_0") == A.play_dragons(1)


def test_heuristic_h5_holds_back_strong_cards():
    # player_0 could beat a single 10 only with its 1s (or by breaking its pair of 2s).
    env = dragons_egg_v0.raw_env(num_players=3, num_rounds=1)
    env.reset(seed=0, options={"deals": [_deal("1E 2E 2W 10E 10W 3E", "10F 9L")]})
    env.step(A.play(10, 1))     # player_1 opens with the 10 of Fire
    env.step(A.PASS)            # player_2
    assert env.agent_selection == "player_0"
    assert _heuristic_choice(env, "player_0") == A.play(3, 1)  # the weakest card that beats it


def test_heuristic_tribute_asks_dragons_then_low_numbers_and_gives_weakest_single():
    def mask(actions):
        return sum(1 << a for a in actions)

    legal = [A.PASS, A.ask("1E"), A.ask("2W"), A.ask("HORSEMAN"), A.ask("9L")]
    assert strongest_ask(mask(legal)) == A.ask("HORSEMAN")            # H8
    assert strongest_ask(mask(legal[:3])) == A.ask("1E")
    hand = mask_of("1E 9E 9W 8L BEAST".split())
    legal = [A.give(c) for c in "1E 9E 9W 8L BEAST".split()]
    th = E.thermometer(hand)
    assert weakest_give(mask(legal), hand, th) == A.give("8L")           # H9: the weakest single
    assert weakest_give(mask(legal + [A.give("EGG")]), hand | EGG_BIT, th) == A.give("EGG")


def _random_states(n, rounds, seeds, flags=None):
    rng = random.Random(n)
    for seed in seeds:
        env = dragons_egg_v0.raw_env(num_players=n, num_rounds=rounds, **(flags or {}))
        env.reset(seed=seed)
        for agent, obs in random_states(env, rng):
            yield env, agent, obs


@pytest.mark.parametrize("n,flags,seeds", [
    (3, {}, 3), (4, {"egg_in_tribute": True, "tribute_asks": 4}, 3),
    (6, {"pass_locks_out": True}, 3),
    (2, {"tribute_asks": 8}, 25),  # small tables: tribute knowledge fills whole hands
    (3, {"tribute_asks": 44}, 35),  # many misses: the Egg must go where there is room
    (4, {}, 12)])
def test_sampled_world_is_consistent_with_what_the_player_knows(n, flags, seeds):
    rng = random.Random(0)
    checked = 0
    for env, _agent, obs in _random_states(n, 3, range(seeds), flags):
        cfg = env.config
        view = decode_observation(obs["observation"], num_rounds=cfg.num_rounds)
        world = sample_world(view, cfg, rng)
        # The player's own observation and legal moves are the same in the sampled world.
        enc = Encoder(n, n, cfg.num_rounds)
        assert np.array_equal(enc.encode(world, 0), obs["observation"])
        s = env.engine_state
        assert E.legal_mask(world) == E.legal_mask(s)
        # Cards and sizes add up.
        seen = world.played
        for h in world.hands:
            assert not seen & h
            seen |= h
        assert seen == ALL_CARDS
        checked += 1
    assert checked > 100


def test_at_two_players_every_sampled_world_is_the_true_one():
    """R4 deals every card, so at 2 players the opponent holds exactly the cards that are
    neither in the observer's hand nor played: the game has no hidden information there, and
    ISMCTS searches the true state."""
    rng = random.Random(0)
    checked = 0
    for env, _agent, obs in _random_states(2, 3, range(6), {}):
        s = env.engine_state
        me = s.current
        view = decode_observation(obs["observation"], num_rounds=env.config.num_rounds)
        for _ in range(3):
            world = sample_world(view, env.config, rng)  # the observer at seat 0
            assert world.hands == [s.hands[me], s.hands[1 - me]]
        checked += 1
    assert checked > 20


def test_sampler_never_uses_a_hidden_cards_true_location():
    """Shuffling the other players' hidden cards changes nothing the sampler produces, and
    over many samples a hidden card lands with every opponent, not just its true holder."""
    n = 4
    env = dragons_egg_v0.raw_env(num_players=n, num_rounds=1)
    env.reset(seed=5)
    for _ in range(6):
        env.step(env.legal_actions()[-1])
    s = env.engine_state
    me = s.current
    name = env.possible_agents[me]
    view = decode_observation(env.observe(name)["observation"], num_rounds=1)
    env._s = shuffled_hidden(s, me, random.Random(1))
    view2 = decode_observation(env.observe(name)["observation"], num_rounds=1)
    env._s = s
    a = sample_world(view, env.config, random.Random(42))
    b = sample_world(view2, env.config, random.Random(42))
    assert a.hands == b.hands
    hidden = [c for q in range(n) if q != me for c in iter_cards(s.hands[q] & ~EGG_BIT)]
    card = hidden[0]
    true_owner = (s.owner[card] - me) % n
    owners = set()
    rng = random.Random(0)
    for _ in range(200):
        w = sample_world(view, env.config, rng)
        owners.add(w.owner[card])
    assert owners == {q for q in range(1, n) if view.out_place[q] < 0}
    assert true_owner in owners


def test_ismcts_prefers_the_obvious_winning_move():
    """With one numbered card left and the lead, ISMCTS plays it (going out first)."""
    config = RulesConfig(num_players=2, num_rounds=1)
    bot = make_agent("ismcts:iterations=60", seed=1)
    bot.start_match(0, config)
    env = dragons_egg_v0.raw_env(num_players=2, num_rounds=1)
    from dragons_egg_env.cards import CARD_CODES
    p0 = ["10F", "9E", "9W"]
    env.reset(seed=0, options={"deals": [[p0, [c for c in CARD_CODES if c not in p0]]]})
    env.step(A.play(10, 1))
    # player_1 must respond; make it pass if it can
    env.step(A.PASS)
    obs = env.observe("player_0")
    assert bot.act(obs["observation"], obs["action_mask"]) == A.play(9, 2)
