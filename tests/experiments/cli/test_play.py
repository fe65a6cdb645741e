"""``dragons-egg play`` for someone who never played: the rules on request, narration of what
happens, the player's own moves echoed, forced passes made for them, the Tarokka deck by
name, reasons for refused tribute cards, and Ctrl-C saving the match."""

import io
import itertools
import json
import re

import pytest

from dragons_egg.agents.base import Agent
from dragons_egg.experiments.cli.main import main
from dragons_egg.experiments.cli.play import _parse_choice, card_from_text, rules_text
from dragons_egg_env import engine as E
from dragons_egg_env.cards import ALL_CARDS, CARD_CODES, NUM_CARDS, card_name, mask_of
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.replay import iter_replay, load_replay


def run(argv, answers, tmp_path, name="m.json"):
    """Play with scripted answers; returns (output, the saved replay's data, prompts)."""
    save = tmp_path / name
    out = io.StringIO()
    prompts = []
    it = iter(answers)

    def read(prompt):
        prompts.append(prompt)
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    assert main(["play", "--save", str(save), *argv], read=read, out=out) == 0
    return out.getvalue(), load_replay(save), prompts


def test_help_explains_the_game(tmp_path):
    text, _, _ = run(["--seed", "1"], ["?", "h", "q"], tmp_path)
    assert "Type ? at any prompt for how to play" in text
    assert text.count("How to play Dragon's Egg") == 2
    for needle in ("Goal: get rid of all your cards first", "1 is the strongest number",
                   "The Egg can never be played", "hands it to the next player",
                   "Tribute (from round 2): the Dragon asks last round's Egg holder for up to "
                   "2 card(s)", "+1 for first place down to -1 for last"):
        assert needle in text, needle


def test_the_explanation_follows_the_rule_flags():
    base = rules_text(RulesConfig())
    assert "you may still play the next time round" in base and "even out of turn" in base
    other = rules_text(RulesConfig(pass_locks_out=True, completion_out_of_turn=False,
                                   tribute_asks=0, reward_scheme="dragon_egg"), "tarokka")
    assert "passing locks you out of the pile until it clears" in other
    assert "in their turn" in other and "Tribute" not in other
    assert "+1 for the Dragon, -1 for the Egg holder, 0 for everyone else" in other
    assert "each suit's Master is its 10, and the Artifact is the Egg" in other


def _public_events(data):
    """From a replay: the number of pile clears, Egg hand-offs and players going out, as
    everyone at the table sees them."""
    clears = eggs = outs = 0
    prev = None
    for _, env in iter_replay(data):
        s = env.engine_state
        now = (len(s.results), len(s.plays), s.egg_holder, len(s.finish), s.phase)
        if prev is not None and prev[0] == now[0]:  # within one round
            if prev[1] and not now[1] and prev[4] in (E.PLAY, E.COMPLETE):
                clears += 1
            if prev[2] != now[2] and prev[4] in (E.PLAY, E.COMPLETE):
                eggs += 1
            outs += now[3] - prev[3]
        prev = now
    return clears, eggs, outs


def test_pile_clears_completions_egg_hand_offs_and_going_out_are_narrated(tmp_path):
    seen = set()
    for seed in range(4):
        text, data, _ = run(["--seed", str(seed), "--rounds", "2"],
                            itertools.repeat("1"), tmp_path)
        clears, eggs, outs = _public_events(data)
        assert len(re.findall(r": the pile clears", text)) == clears
        assert len(re.findall(r"held the Egg and cleared the pile, so the Egg passes to",
                              text)) == eggs
        assert len(re.findall(r" (is|are) out, in \d(st|nd|rd|th) place!", text)) == outs
        seen |= {k for k in ("Everyone else passed: the pile clears",
                             "played a dragon card: the pile clears",
                             "completed the set of", "the Egg passes to you",
                             "so the Egg passes to player_") if k in text}
    assert len(seen) == 5, seen


def test_own_moves_are_echoed_and_forced_passes_made(tmp_path):
    """Every move of the player is either answered at a prompt (and echoed) or a pass made
    for them because passing was their only move (and said so)."""
    auto = 0
    for seed in range(3):
        text, data, prompts = run(["--seed", str(seed), "--players", "3", "--rounds", "2"],
                                  itertools.repeat("1"), tmp_path)
        mine = [a for agent, a in data["actions"] if agent == "player_0"]
        echoed = text.count("\n  You: ")
        forced = len(re.findall(r"^(You cannot beat the pile|You have no numbered card to "
                                r"lead with|You are locked out|There is nothing left to "
                                r"ask for)", text, flags=re.M))
        assert echoed == len(prompts)  # every answer was a legal move
        assert echoed + forced == len(mine)
        auto += forced
    assert auto > 0


def test_the_tarokka_deck_lists_cards_apart_and_takes_their_names(tmp_path):
    for card in range(NUM_CARDS):
        assert card_from_text(card_name(card, "tarokka")) == card
        assert card_from_text(card_name(card, "tarokka").upper()) == card
        assert card_from_text(CARD_CODES[card].lower()) == card
    assert card_from_text("master swords") == card_from_text("10 of Swords") == \
        CARD_CODES.index("10E")
    assert card_from_text("the 5 of coin") == CARD_CODES.index("5F")
    assert card_from_text("11 of Coins") is None and card_from_text("5 of Cups") is None

    asks = []

    def read_factory(out):
        def read(prompt):
            block = out.getvalue()[out.getvalue().rfind("Dragon's Egg: round"):]
            if "You are the Dragon: ask" in block:
                askable = block.split("you may ask for: ", 1)[1].splitlines()[0].split(", ")
                asks.append(askable[0])
                return askable[0].lower()  # a Tarokka name, typed in lower case
            nums = re.findall(r"^  (\d+)\) ", block, flags=re.M)
            return nums[-1] if nums else "1"
        return read

    for seed in range(40):
        out = io.StringIO()
        main(["play", "--seed", str(seed), "--players", "2", "--rounds", "2", "--bots", "random",
              "--deck-style", "tarokka", "--save", str(tmp_path / "t.json")],
             read=read_factory(out), out=out)
        if asks:
            break
    text = out.getvalue()
    assert asks and all(" of " in a or a in ("Beast", "Darklord", "Horseman", "Executioner")
                        for a in asks)
    assert f"  You: ask for {asks[0]}" in text
    hand_line = text.split("> player_0", 1)[1].splitlines()[1].strip()
    assert ", " in hand_line and re.fullmatch(r"((\d+|Master) of \w+|\w+)(, ((\d+|Master) of "
                                              r"\w+|\w+))*", hand_line)


def _tribute_states():
    cfg = RulesConfig(num_players=3, num_rounds=2)
    h0 = mask_of("1E 2E 5W 9L BEAST".split())
    h2 = mask_of("7E 8E 1F EGG".split())
    h1 = ALL_CARDS & ~h0 & ~h2
    ask = E.state_from_info(cfg, hands=[h0, h1, h2], phase=E.ASK, current=0, round_index=1,
                            dragon=0, victim=2, asks_left=1, asked=mask_of(["3W"]),
                            scores=[1.0, 0.0, -1.0])
    g0 = h0 | mask_of(["1F", "EGG"])
    g2 = h2 & ~mask_of(["1F", "EGG"])
    give = E.state_from_info(cfg, hands=[g0, h1, g2], phase=E.GIVE, current=0, round_index=1,
                             dragon=0, victim=2, asks_left=0, asked=mask_of(["1F", "3W"]),
                             hits=mask_of(["1F"]), scores=[1.0, 0.0, -1.0])
    return ask, give


@pytest.mark.parametrize("phase,text,reason", [
    ("ask", "1E", "You already hold 1E: ask for a card you do not have."),
    ("ask", "egg", "The Egg can never be asked for: ask for another card."),
    ("ask", "3W", "You have already asked for 3W: each card can be asked for once."),
    ("give", "7E", "You do not hold 7E: give back a card from your hand."),
    ("give", "artifact", "The Egg cannot be given back in the tribute (rule egg_in_tribute "
                         "is off)."),
    ("give", "9 of glyphs", "You do not hold 9W: give back a card from your hand."),
])
def test_a_refused_ask_or_give_says_why(phase, text, reason):
    ask, give = _tribute_states()
    s = ask if phase == "ask" else give
    legal = E.legal_actions(s)
    assert _parse_choice(text, legal, s, 0) == reason
    assert _parse_choice("1F", legal, s, 0) in legal  # 1F: askable / held and givable


def test_naming_a_card_outside_the_tribute_says_how_to_move(tmp_path):
    text, _, _ = run(["--seed", "1"], ["5W", "q"], tmp_path)
    assert "Cards are named only in the tribute (asking and giving back); now type the " \
           "number of a move." in text


def test_ctrl_c_at_the_prompt_saves_the_match(tmp_path):
    answers = iter(["1", "1"])

    def read(prompt):
        try:
            return next(answers)
        except StopIteration:
            raise KeyboardInterrupt from None

    out = io.StringIO()
    save = tmp_path / "ctrl-c.json"
    assert main(["play", "--seed", "2", "--save", str(save)], read=read, out=out) == 0
    text = out.getvalue()
    assert "Interrupted." in text and f"Match saved to {save}" in text
    data = json.loads(save.read_text())
    assert not data["finished"] and data["actions"]
    list(iter_replay(load_replay(save)))  # it replays


class InterruptingBot(Agent):
    """A bot during whose turn the user presses Ctrl-C."""

    def act(self, observation, action_mask):
        raise KeyboardInterrupt


def test_ctrl_c_while_a_bot_thinks_saves_the_match(tmp_path):
    out = io.StringIO()
    save = tmp_path / "bot.json"
    assert main(["play", "--seed", "0", "--bots", f"{__name__}:InterruptingBot",
                 "--save", str(save)], read=lambda prompt: "1", out=out) == 0
    assert "Interrupted." in out.getvalue() and save.exists()
    assert f"player_1={__name__}:InterruptingBot" in out.getvalue()
