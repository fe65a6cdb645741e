"""Image rendering (``render_mode="rgb_array"``, ``render_image``); replay GIFs are in
``tests/experiments/cli/test_gif.py``."""

import random
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("PIL", reason="image rendering needs Pillow (the 'render' extra)")

from pettingzoo.test import render_test  # noqa: E402
from support import (
    shuffled_hidden,  # noqa: E402
)

from dragons_egg_env import actions as A  # noqa: E402
from dragons_egg_env import dragons_egg_v0  # noqa: E402
from dragons_egg_env import engine as E  # noqa: E402
from dragons_egg_env.cards import EGG  # noqa: E402
from dragons_egg_env.render_image import image_size, render_rgb  # noqa: E402


def play_random(env, steps, seed=0):
    rng = random.Random(seed)
    for _ in range(steps):
        legal = env.legal_actions()
        if not legal:
            break
        env.step(legal[rng.randrange(len(legal))])


# -- the environment's render modes ---------------------------------------------------------
@pytest.mark.parametrize("deck_style", ["dragon", "tarokka"])
def test_render_test_every_mode(deck_style):
    env = dragons_egg_v0.env(num_players=3)
    assert env.metadata["render_modes"] == ["ansi", "human", "rgb_array"]

    def make(render_mode=None):
        return dragons_egg_v0.env(num_players=3, render_mode=render_mode, deck_style=deck_style)

    render_test(make)


def test_rgb_array_shape_dtype_and_determinism():
    env = dragons_egg_v0.env(num_players=4, render_mode="rgb_array")
    env.reset(seed=11)
    a = env.render()
    b = env.render()
    assert isinstance(a, np.ndarray) and a.dtype == np.uint8 and a.ndim == 3 and a.shape[2] == 3
    assert a.shape[:2] == image_size(env.unwrapped.engine_state, None)
    assert np.array_equal(a, b)
    assert a.std() > 10  # a picture, not a blank
    again = dragons_egg_v0.env(num_players=4, render_mode="rgb_array")
    again.reset(seed=11)
    assert np.array_equal(again.render(), a)
    assert np.array_equal(env.unwrapped.render_image(), a)  # render() is the spectator view


def test_image_changes_when_a_card_is_played_and_keeps_its_shape():
    env = dragons_egg_v0.raw_env(num_players=4, render_mode="rgb_array")
    env.reset(seed=2)
    before = env.render()
    env.step(env.legal_actions()[-1])  # the opening play
    after = env.render()
    assert after.shape == before.shape
    assert not np.array_equal(before, after)


def test_viewer_image_differs_from_spectator_and_hides_other_hands():
    env = dragons_egg_v0.raw_env(num_players=4)
    env.reset(seed=3)
    play_random(env, 12)
    spectator = env.render_image()
    views = [env.render_image(viewer=a) for a in env.possible_agents]
    for v in views:
        assert v.dtype == np.uint8 and v.shape[2] == 3
        assert v.shape != spectator.shape or not np.array_equal(v, spectator)
    assert not np.array_equal(views[0], views[1])
    # seat numbers and agent names draw the same view
    s = env.engine_state
    assert np.array_equal(render_rgb(s, env.possible_agents, 2), views[2])
    assert np.array_equal(render_rgb(s, env.possible_agents, "player_2"), views[2])


@pytest.mark.parametrize("flags", [{}, {"egg_in_tribute": True, "tribute_asks": 4}])
def test_viewer_image_does_not_depend_on_hidden_cards(flags):
    """R19/R34: reshuffling the cards a viewer cannot see leaves its image unchanged."""
    rng = random.Random(7)
    env = dragons_egg_v0.raw_env(num_players=4, num_rounds=2, **flags)
    env.reset(seed=7)
    checked = 0
    while env.phase() != "done":
        if rng.random() < 0.05:
            s = env.engine_state
            for q in range(4):
                img = render_rgb(s, env.possible_agents, q)
                other = render_rgb(shuffled_hidden(s, q, rng), env.possible_agents, q)
                assert np.array_equal(img, other), f"seat {q} sees hidden cards ({s.phase_name})"
                checked += 1
        legal = env.legal_actions()
        env.step(legal[rng.randrange(len(legal))])
    assert checked >= 4


def test_egg_holder_hidden_from_who_does_not_know_it():
    env = dragons_egg_v0.raw_env(num_players=4)
    env.reset(seed=0)
    s = env.engine_state
    holder = s.egg_holder
    viewer = (holder + 1) % 4
    other = (holder + 2) % 4
    # move the Egg to another hidden hand, swapping it with one of that hand's cards
    t = s.clone()
    swap = next(c for c in range(40) if t.hands[other] >> c & 1)
    t.hands[holder] ^= (1 << EGG) | (1 << swap)
    t.hands[other] ^= (1 << EGG) | (1 << swap)
    t.owner[EGG], t.owner[swap] = other, holder
    t.egg_holder, t.egg_known = other, 1 << other
    t.th = [E.thermometer(h) for h in t.hands]
    t.mask = -1
    names = env.possible_agents
    assert np.array_equal(render_rgb(s, names, viewer), render_rgb(t, names, viewer))
    assert not np.array_equal(render_rgb(s, names, holder), render_rgb(t, names, holder))
    assert not np.array_equal(render_rgb(s, names, None), render_rgb(t, names, None))


def test_tribute_exchange_only_in_the_two_players_images():
    """R34: what the Dragon asked for, received and gave back shows to the two players only,
    in the image and in a replay frame's caption."""
    env = dragons_egg_v0.raw_env(num_players=4, num_rounds=2, tribute_asks=4)
    env.reset(seed=1)
    rng = random.Random(1)
    while not (env.phase() == "ask" and env.engine_state.asked):
        legal = env.legal_actions()
        env.step(legal[rng.randrange(len(legal))])
    from dragons_egg.experiments.cli.gif import (
        _action_text,  # the GIF captions hide it the same way
    )

    s = env.engine_state
    blank = s.clone()
    blank.asked = blank.hits = blank.given = 0
    blank.asks_left = 1
    names = env.possible_agents
    for q in [None, *range(4)]:
        party = q is None or q in (s.dragon, s.victim)
        same = np.array_equal(render_rgb(s, names, q), render_rgb(blank, names, q))
        assert same != party, f"viewer {q}"
        text = _action_text(s, [names[s.current], A.ask("10F")], q, "tarokka")
        assert ("Master of Coins" in text) == party


def test_completion_offer_only_in_the_offered_players_image():
    """R12: another viewer's image of an offer is its image of the plain turn."""
    env = dragons_egg_v0.raw_env(num_players=4, num_rounds=1)
    rng = random.Random(3)
    for seed in range(200):
        env.reset(seed=seed)
        while env.phase() not in ("done", "complete"):
            legal = env.legal_actions()
            env.step(legal[rng.randrange(len(legal))])
        if env.phase() == "complete":
            break
    s = env.engine_state
    assert s.phase == E.COMPLETE
    plain = s.clone()
    plain.phase, plain.current, plain.mask = E.PLAY, s.turn, -1
    names = env.possible_agents
    for q in range(4):
        same = np.array_equal(render_rgb(s, names, q), render_rgb(plain, names, q))
        assert same == (q != s.current), f"seat {q}"


def test_deck_styles_and_bad_arguments():
    env = dragons_egg_v0.raw_env(num_players=3)
    env.reset(seed=1)
    s, names = env.engine_state, env.possible_agents
    dragon = render_rgb(s, names, None, "dragon")
    tarokka = render_rgb(s, names, None, "tarokka")
    assert dragon.shape == tarokka.shape and not np.array_equal(dragon, tarokka)
    tar_env = dragons_egg_v0.raw_env(num_players=3, deck_style="tarokka")
    tar_env.reset(seed=1)
    assert np.array_equal(tar_env.render_image(), tarokka)
    with pytest.raises(ValueError, match="deck_style"):
        render_rgb(s, names, None, "poker")
    with pytest.raises(ValueError, match="viewer"):
        render_rgb(s, names, 3)
    with pytest.raises(ValueError, match="viewer"):
        render_rgb(s, names, "player_9")
    with pytest.raises(ValueError, match="names"):
        render_rgb(s, names[:2])


def test_every_table_size_draws(tmp_path):
    for n in range(2, 9):
        env = dragons_egg_v0.raw_env(num_players=n, num_rounds=1)
        env.reset(seed=n)
        play_random(env, 3 * n, seed=n)
        for viewer in (None, "player_1"):
            img = env.render_image(viewer)
            assert img.dtype == np.uint8 and img.shape[2] == 3
            assert img.shape[:2] == image_size(env.engine_state, None if viewer is None else 1)


def test_missing_pillow_is_a_clear_error(monkeypatch):
    env = dragons_egg_v0.raw_env(num_players=2)
    env.reset(seed=0)
    for mod in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")]:
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(ImportError, match="render"):
        env.render_image()


def test_modules_import_without_pillow():
    code = ("import sys; sys.modules['PIL'] = None\n"
            "import dragons_egg_env.render_image\n"
            "from dragons_egg_env import dragons_egg_v0\n"
            "assert 'rgb_array' in dragons_egg_v0.raw_env.metadata['render_modes']\n")
    subprocess.run([sys.executable, "-c", code], check=True)
