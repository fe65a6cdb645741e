"""Replays drawn as GIFs and PNG frames (``dragons_egg.experiments.cli.gif``, ``dragons-egg gif``)."""

import json
import random
import subprocess
import sys
from itertools import pairwise

import numpy as np
import pytest

pytest.importorskip("PIL", reason="image rendering needs Pillow (the 'render' extra)")

from PIL import Image  # noqa: E402
from support import random_match  # noqa: E402

from dragons_egg.experiments.cli.gif import main, replay_frames, replay_to_frames, replay_to_gif  # noqa: E402
from dragons_egg_env import dragons_egg_v0  # noqa: E402
from dragons_egg_env.replay import ReplayError, partial_replay, replay_moves  # noqa: E402


@pytest.fixture(scope="module")
def replay_data():
    env = dragons_egg_v0.env(num_players=2, num_rounds=1)
    env.reset(seed=5)
    random_match(env, random.Random(5))
    return json.loads(json.dumps(env.unwrapped.to_replay()))


@pytest.fixture
def replay_file(tmp_path, replay_data):
    path = tmp_path / "match.json"
    path.write_text(json.dumps(replay_data))
    return path


def test_gif_module_imports_without_pillow():
    code = ("import sys; sys.modules['PIL'] = None\n"
            "import dragons_egg.experiments.cli.gif\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- replays as GIFs and frames -----------------------------------------------------------
def test_gif_round_trip_has_one_frame_per_step(tmp_path, replay_file, replay_data):
    out = tmp_path / "match.gif"
    steps = len(replay_data["actions"])
    assert replay_to_gif(replay_file, out, fps=5) == steps + 1
    with Image.open(out) as gif:
        assert gif.format == "GIF"
        assert gif.n_frames == steps + 1
        durations = []
        for k in range(gif.n_frames):
            gif.seek(k)
            durations.append(gif.info["duration"])
        assert durations[0] == 200 and durations[-1] > durations[0]  # a hold on the last
    # a viewer's GIF of an unfinished match from the dict, in the other deck style
    view = tmp_path / "view.gif"
    part = partial_replay(replay_data, 6)
    assert replay_to_gif(part, view, viewer="player_1", deck_style="tarokka") == 7
    with Image.open(view) as gif:
        assert gif.n_frames == 7


def test_frames_are_numbered_pngs_and_deterministic(tmp_path, replay_data):
    data = partial_replay(replay_data, 4)
    paths = replay_to_frames(data, tmp_path / "frames", viewer="player_0")
    assert [p.name for p in paths] == [f"frame_{k:04d}.png" for k in range(5)]
    frames = list(replay_frames(data, viewer="player_0"))
    for path, frame in zip(paths, frames, strict=True):
        with Image.open(path) as im:
            assert np.array_equal(np.asarray(im.convert("RGB")), frame)
    assert len({f.shape for f in frames}) == 1
    assert all(not np.array_equal(a, b) for a, b in pairwise(frames))


def test_gif_errors(tmp_path, replay_file, replay_data):
    out = tmp_path / "x.gif"
    with pytest.raises(ValueError, match="not an agent of this replay"):
        replay_to_gif(replay_data, out, viewer="player_5")
    bad = dict(partial_replay(replay_data, 3))
    bad["actions"] = bad["actions"] + [["player_0", 133]]
    with pytest.raises(ReplayError, match="step 3"):
        replay_to_gif(bad, out)
    with pytest.raises(ReplayError):
        replay_to_gif(tmp_path / "missing.json", out)
    assert not out.exists()  # nothing written for a faulty replay


def test_command_line(tmp_path, replay_file, replay_data, capsys):
    out = tmp_path / "cli.gif"
    frames = tmp_path / "frames"
    data = partial_replay(replay_data, 3)
    short = tmp_path / "short.json"
    short.write_text(json.dumps(data))
    assert main([str(short), str(out), "--viewer", "player_0", "--deck-style", "tarokka",
                 "--fps", "3", "--frames-dir", str(frames)]) == 0
    assert "4 frames" in capsys.readouterr().out
    with Image.open(out) as gif:
        assert gif.n_frames == 4
    assert len(list(frames.glob("frame_*.png"))) == 4

    def usage_error(argv):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("usage: python -m dragons_egg.experiments.cli.gif")
        assert len(err.splitlines()) <= 8 and "Traceback" not in err
        return err.splitlines()[-1]

    err = usage_error([str(short), str(tmp_path / "y.gif"), "--viewer", "player_7"])
    assert "player_7" in err and "not an agent" in err

    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"format": "dragons-egg-replay", ')
    assert "not valid JSON" in usage_error([str(corrupt), str(tmp_path / "z.gif")])

    assert "cannot read replay" in usage_error([str(tmp_path / "nope.json"),
                                                str(tmp_path / "z.gif")])
    assert not (tmp_path / "y.gif").exists() and not (tmp_path / "z.gif").exists()

    with pytest.raises(SystemExit) as exc:
        main([str(short), str(out), "--fps", "0"])
    assert exc.value.code == 2


def test_the_command_line_never_writes_over_a_picture_unasked(tmp_path, replay_file, replay_data,
                                                             capsys):
    """An existing GIF, or a frames folder holding frames, is refused before anything is
    drawn; --overwrite replaces them, and a shorter replay's frames do not mix with the
    longer one's left there."""
    out, frames = tmp_path / "m.gif", tmp_path / "frames"
    assert main([str(replay_file), str(out), "--frames-dir", str(frames)]) == 0
    n = len(replay_moves(replay_data)) + 1
    assert len(list(frames.glob("frame_*.png"))) == n
    before = out.read_bytes()
    short = tmp_path / "short.json"
    short.write_text(json.dumps(partial_replay(replay_data, 2)))
    for argv, named in (([str(short), str(out)], "m.gif exists"),
                        ([str(short), str(tmp_path / "other.gif"), "--frames-dir", str(frames)],
                         "earlier frames")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert named in err and "--overwrite" in err
    assert out.read_bytes() == before and not (tmp_path / "other.gif").exists()
    assert len(list(frames.glob("frame_*.png"))) == n
    assert main([str(short), str(out), "--frames-dir", str(frames), "--overwrite"]) == 0
    with Image.open(out) as gif:
        assert gif.n_frames == 3
    assert sorted(p.name for p in frames.glob("frame_*.png")) == [
        "frame_0000.png", "frame_0001.png", "frame_0002.png"]


@pytest.mark.parametrize("name", ["out.png", "out", "out.gif.txt", "frames/"])
def test_an_output_name_that_is_not_a_gif_is_refused(tmp_path, replay_file, name, capsys):
    """The GIF is written whatever the name says, so a name ending in another extension
    (a GIF inside out.png) is refused when the command line is read."""
    out = tmp_path / name
    with pytest.raises(SystemExit) as exc:
        main([str(replay_file), str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "does not end in .gif" in err and "--frames-dir" in err
    assert not out.exists()
    with pytest.raises(ValueError, match="does not end in .gif"):
        replay_to_gif(replay_file, out)
    assert main([str(replay_file), str(tmp_path / "upper.GIF")]) == 0


def test_dragons_egg_gif_errors_print_the_gif_usage(tmp_path, capsys):
    """Errors found after parsing (a binary replay) print the subcommand's usage."""
    from dragons_egg.experiments.cli.main import main as cli_main

    binary = tmp_path / "bin.json"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(SystemExit) as exc:
        cli_main(["gif", str(binary), str(tmp_path / "b.gif")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: dragons-egg gif ")
    assert "dragons-egg gif: error: " in err and "Traceback" not in err
