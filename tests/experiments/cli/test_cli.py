"""The ``dragons-egg`` command line, driven with scripted input."""

import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dragons_egg.agents.ppo import PREVIOUS
from dragons_egg.experiments.cli.main import main
from dragons_egg_env.replay import replay


def scripted(lines):
    it = iter(lines)

    def read(prompt):
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None
    return read


def test_play_a_whole_match_with_scripted_input(tmp_path):
    save = tmp_path / "m.json"
    out = io.StringIO()
    answers = itertools.chain(["hello", "0", "99", "h"], itertools.repeat("1"))
    rc = main(["play", "--seed", "2", "--players", "3", "--rounds", "2", "--bots", "greedy",
               "heuristic", "--save", str(save)], read=lambda p: next(answers), out=out)
    text = out.getvalue()
    assert rc == 0
    assert "I did not understand 'hello'" in text
    assert "There is no move 0" in text and "There is no move 99" in text
    assert "Type the number of a move" in text
    assert "Round 1 over" in text and "Round 2 over" in text and "Final scores" in text
    assert "player_1=greedy" in text and "player_2=heuristic" in text
    env = replay(save)
    assert env.phase() == "done"


def test_play_quit_saves_a_replay_and_eof_quits(tmp_path):
    save = tmp_path / "q.json"
    out = io.StringIO()
    assert main(["play", "--seed", "1", "--save", str(save)], read=scripted(["q"]), out=out) == 0
    assert "You quit." in out.getvalue() and f"Match saved to {save}" in out.getvalue()
    data = json.loads(save.read_text())
    assert not data["finished"]
    replay(save)
    save2 = tmp_path / "eof.json"
    assert main(["play", "--seed", "1", "--save", str(save2)], read=scripted([]),
                out=io.StringIO()) == 0
    assert save2.exists()


def last_move_reader(out, tribute_answer):
    """Answer with the last move of the latest menu (the biggest play); when asked for
    tribute, name a card with ``tribute_answer(menu_text)``."""
    import re

    state = {"asks": 0}

    def read(prompt):
        text = out.getvalue()
        block = text[text.rfind("Dragon's Egg: round"):]
        if "You are the Dragon: ask" in block:
            state["asks"] += 1
            return tribute_answer(block)
        nums = re.findall(r"^  (\d+)\) ", block, flags=re.M)
        return nums[-1] if nums else "1"
    return read, state


def test_play_walks_the_dragon_through_the_tribute(tmp_path):
    def answer(block):
        askable = block.split("you may ask for:", 1)[1].split()
        return askable[0].lower()  # a card code, in lower case

    for seed in range(40):
        out = io.StringIO()
        read, state = last_move_reader(out, answer)
        main(["play", "--seed", str(seed), "--players", "2", "--rounds", "2", "--bots",
              "random", "--save", str(tmp_path / "c.json")], read=read, out=out)
        if state["asks"]:
            break
    text = out.getvalue()
    assert state["asks"] == 2
    assert "You are the Dragon: ask player_1 for up to 2 more card(s)" in text
    assert "asked so far:" in text
    assert "Give back one card for each card received" in text or "received: nothing" in text
    assert "Round 2 over" in text


@pytest.mark.parametrize("argv,needle", [
    (["play", "--seat", "5"], "--seat must be 0..3"),
    (["play", "--bots", "wizard"], "unknown agent 'wizard'"),
    (["play", "--rule", "tribute_asks=99"], "tribute_asks must be 0..44"),
    (["play", "--players", "x"], "expected an integer"),
    (["fly"], "invalid choice"),
    ([], "required"),
])
def test_bad_arguments_are_clear_errors(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv, read=scripted([]), out=io.StringIO())
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_replay_steps_through_a_saved_match(tmp_path):
    save = tmp_path / "m.json"
    answers = itertools.repeat("1")
    main(["play", "--seed", "3", "--players", "3", "--rounds", "1", "--save", str(save)],
         read=lambda p: next(answers), out=io.StringIO())
    n_actions = len(json.loads(save.read_text())["actions"])
    out = io.StringIO()
    assert main(["replay", str(save), "--all"], out=out) == 0
    text = out.getvalue()
    assert f"--- step {n_actions}/{n_actions} ---" in text
    assert "(hidden)" not in text
    out = io.StringIO()
    assert main(["replay", str(save), "--view", "player_1"],
                read=scripted(["", "", "q"]), out=out) == 0
    text = out.getvalue()
    assert "--- step 2/" in text and "--- step 3/" not in text
    assert text.count("(hidden)") >= 2


def test_replay_errors(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(SystemExit) as exc:
        main(["replay", str(bad)], out=io.StringIO())
    assert exc.value.code == 2 and "a replay is a JSON object" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["replay", str(tmp_path / "none.json")], out=io.StringIO())
    assert "cannot read replay" in capsys.readouterr().err


def test_console_script_help():
    res = subprocess.run([sys.executable, "-m", "dragons_egg.experiments.cli.main", "--help"],
                         capture_output=True, text=True)
    assert res.returncode == 0
    for cmd in ("play", "tournament", "replay", "gif", "bench", "train", "tribute-fit"):
        assert cmd in res.stdout


def test_bench_and_gif_take_their_options_in_the_usual_places(capsys):
    from dragons_egg.experiments.cli.main import build_parser

    args = build_parser().parse_args(["bench", "--seconds", "1", "--players", "3",
                                      "--json", "b.json"])
    assert (args.seconds, args.players, args.json) == (1.0, 3, "b.json")
    args = build_parser().parse_args(["gif", "--frames-dir", "D", "a.json", "b.gif",
                                      "--fps", "4"])
    assert (args.replay, args.out, args.frames_dir, args.fps) == ("a.json", "b.gif", "D", 4.0)
    for command, option in (("bench", "--seconds"), ("gif", "--frames-dir")):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert option in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--seconds", "-1"])
    assert exc.value.code == 2
    assert "expected a positive number" in capsys.readouterr().err


# -- user mistakes: one line naming the problem, the subcommand's usage, exit status 2 -------
def usage_error(argv, capsys, command):
    with pytest.raises(SystemExit) as exc:
        main(argv, read=scripted(["q"]), out=io.StringIO())
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: dragons-egg {command} "), err
    assert "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith(f"dragons-egg {command}: error: ")
    return last


@pytest.mark.parametrize("argv,needle", [
    (["--bots", "ppo:path=/nope.zip"], "ppo: checkpoint /nope.zip does not exist"),
    (["--bots", "rllib:path=/nope"], "rllib: exported module folder /nope does not exist"),
    (["--bots", "ismcts:iterations=0"], "ismcts: iterations must be an integer >= 1, got 0"),
    (["--bots", "ismcts:iterations=-5"], "ismcts: iterations must be an integer >= 1, got -5"),
    (["--players", "5", "--bots", f"ppo:path={PREVIOUS}"],
     f"ppo:path={PREVIOUS} plays tables of up to 4 players (the size its policy was trained "
     "for), not 5"),
    (["--players", "5", "--bots", "heuristic", f"ppo:path={PREVIOUS}"],
     "plays tables of up to 4 players"),
    (["--bots", "ppo:path=TMP"], "is a directory, not a checkpoint file"),
    (["--bots", "nobody:Bot"], "no module named 'nobody'"),
    (["--seat", "5"], "--seat must be 0..3 for a table of 4"),
    (["--save", "/dev/null/x.json"], "--save /dev/null/x.json: /dev/null is not a directory"),
    (["--save", "TMP"], "is a directory; name a file"),
])
def test_play_mistakes_are_one_line_errors(argv, needle, tmp_path, capsys):
    argv = [a.replace("TMP", str(tmp_path)) for a in argv]
    assert needle in usage_error(["play", *argv], capsys, "play")


def test_a_checkpoint_that_does_not_load_is_a_one_line_error(tmp_path, capsys):
    import zipfile

    from dragons_egg.agents.ppo import PREVIOUS

    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(PREVIOUS) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, b"garbage" if item.filename == "policy.pth"
                         else src.read(item.filename))
    last = usage_error(["play", "--bots", f"ppo:path={broken},trust=1", "--save",
                        str(tmp_path / "x.json")], capsys, "play")
    assert f"checkpoint {broken} could not be loaded" in last
    assert not (tmp_path / "x.json").exists()


def _illegal_match_replay(path):
    from dragons_egg_env import dragons_egg_v0

    env = dragons_egg_v0.env(num_players=3, num_rounds=1)
    env.reset(seed=4)
    for _ in range(3):
        env.step(env.unwrapped.legal_actions()[0])
    illegal = next(a for a in range(134) if a not in env.unwrapped.legal_actions())
    agent = env.agent_selection
    env.step(illegal)
    env.unwrapped.save_replay(str(path))
    return agent, illegal


def test_replay_mistakes_are_one_line_errors(tmp_path, capsys):
    save = tmp_path / "m.json"
    main(["play", "--seed", "3", "--players", "3", "--rounds", "1", "--save", str(save)],
         read=lambda p: "1", out=io.StringIO())
    data = json.loads(save.read_text())
    binary = tmp_path / "bin.json"
    binary.write_bytes(bytes(range(256)) * 4)
    assert "not UTF-8" in usage_error(["replay", str(binary)], capsys, "replay")
    for k, bad in enumerate(["x", ["player_0"], ["player_0", "seven"], ["player_0", 1.5],
                             ["player_0", 999], None]):
        path = tmp_path / f"bad{k}.json"
        path.write_text(json.dumps(dict(data, actions=data["actions"][:2] + [bad]
                                        + data["actions"][3:])))
        out = io.StringIO()
        with pytest.raises(SystemExit) as exc:
            main(["replay", str(path), "--all"], out=out)
        assert exc.value.code == 2 and out.getvalue() == ""  # checked before anything shows
        err = capsys.readouterr().err
        assert err.startswith("usage: dragons-egg replay ") and "Traceback" not in err
    assert "cannot read replay" in usage_error(["replay", str(tmp_path)], capsys, "replay")
    assert "--view must be 'all' or one of player_0, player_1, player_2" in usage_error(
        ["replay", str(save), "--view", "player_9"], capsys, "replay")


def test_replay_shows_the_illegal_move_that_ended_a_match(tmp_path):
    from dragons_egg_env.actions import describe

    path = tmp_path / "illegal.json"
    agent, illegal = _illegal_match_replay(path)
    out = io.StringIO()
    assert main(["replay", str(path), "--all"], out=out) == 0
    text = out.getvalue()
    assert f"next: {agent} makes an illegal move, {describe(illegal)}, which ends the match" \
        in text
    assert "--- step 4/4 ---" in text and f"The match ended at {agent}'s illegal move." in text


def test_no_mistake_prints_a_traceback_from_the_console_script(tmp_path):
    """The installed command, end to end."""
    script = str(Path(sys.executable).with_name("dragons-egg"))
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    for argv in (["play", "--bots", "ppo:path=/nope.zip"], ["play", "--players", "5", "--bots",
                 f"ppo:path={PREVIOUS}"], ["replay", str(binary)], ["gif", str(binary), "x.png"],
                 ["play", "--bots", "ismcts:iterations=-5"]):
        res = subprocess.run([script, *argv], input="q\n", capture_output=True, text=True,
                             cwd=tmp_path, timeout=120)
        assert res.returncode == 2, (argv, res.stderr)
        assert "Traceback" not in res.stderr and res.stderr.startswith(
            f"usage: dragons-egg {argv[0]} "), (argv, res.stderr)


def test_errors_after_parsing_print_the_subcommand_usage(tmp_path, capsys):
    assert "dragons-egg gif: error: argument out" in usage_error(
        ["gif", "a.json", "b.png"], capsys, "gif")
    assert "--json: directory" in usage_error(
        ["bench", "--json", str(tmp_path / "no" / "b.json")], capsys, "bench")
