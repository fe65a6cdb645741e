"""Replays as pictures: an animated GIF or numbered PNG frames, one frame per step.

``python -m dragons_egg.experiments.cli.gif REPLAY.json OUT.gif [--viewer player_0] [--deck-style
tarokka] [--fps 2] [--frames-dir DIR] [--overwrite]``

Frame ``k`` is the table after the first ``k`` recorded actions (frame 0: after the deal), drawn
by :func:`dragons_egg_env.render_image.render_rgb` with a caption naming the step and the action
that led to it. A viewer's frames show only what that player may know: its own hand, the Egg's
holder where it knows it (R19), a completion offer (R12) and its refusal only when it was the
offered player, and the cards of the tribute exchange only when it is one of the two tribute
players (R34). There is still one frame per step, so a refused offer shows to every viewer
as a step that names no action.

Needs Pillow (``pip install 'dragons-egg[render]'``), imported only when drawing. The whole
replay is checked before anything is written, so a corrupt replay leaves no partial output; it is
a :class:`~dragons_egg_env.replay.ReplayError` (the command line prints it and exits with 2).
The command line refuses an existing GIF, and a frames folder holding earlier frames, unless
``--overwrite`` (which removes those frames first); the functions write where they are told.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dragons_egg.experiments.common.args import positive_float
from dragons_egg.experiments.common.runs import claim_output
from dragons_egg_env import engine as E
from dragons_egg_env.actions import decode, describe
from dragons_egg_env.cards import DECK_STYLES, card_name, iter_cards
from dragons_egg_env.extras import explain, require_cli
from dragons_egg_env.render_image import render_rgb
from dragons_egg_env.replay import ReplayError, iter_replay, load_replay, replay_moves

CAPTION_H = 30
FRAME_GLOB = "frame_*.png"
LAST_FRAME_HOLD_MS = 3000


def _pil() -> tuple[ModuleType, ModuleType, ModuleType]:
    """Pillow's ``Image``, ``ImageDraw`` and ``ImageFont`` modules, imported when drawing."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as exc:  # a MissingExtraError naming the render extra
        raise explain(exc, "writing replay images", "render") from None
    return Image, ImageDraw, ImageFont


def _load(replay: dict[str, Any] | str | Path) -> dict[str, Any]:
    if isinstance(replay, dict):
        return replay
    if isinstance(replay, (str, Path)):
        return load_replay(replay)
    raise ReplayError(f"a replay is a dict or a path to a JSON file, got {type(replay).__name__}")


def _check(data: dict[str, Any], viewer: str | None, deck_style: str) -> list[str]:
    """Play the whole replay once (a :class:`ReplayError` on any fault) and check the viewer;
    returns the agents."""
    if deck_style not in DECK_STYLES:
        raise ValueError(f"deck_style must be one of {', '.join(map(repr, DECK_STYLES))}, "
                         f"got {deck_style!r}")
    agents: list[str] = []
    for k, env in iter_replay(data):
        if k == 0:
            agents = list(env.possible_agents)
            if viewer is not None and viewer not in agents:
                raise ValueError(f"viewer {viewer!r} is not an agent of this replay "
                                 f"(agents: {', '.join(agents)}; or no viewer for every hand)")
    return agents


def _action_text(s: E.State, item: Any, seat: int | None, deck_style: str) -> str | None:
    """What the viewer may read about the action about to be applied to ``s`` (None: nothing)."""
    if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], int)):
        return None
    agent, action = item
    try:
        kind, a, _ = decode(action)
    except ValueError:
        return None
    party = seat is None or seat in (s.dragon, s.victim)
    if s.phase == E.COMPLETE and seat is not None and seat != s.current and kind == "pass":
        return None  # R12: a refused offer is seen by the offered player only
    if kind == "ask":
        return f"{agent} asks for {card_name(a, deck_style)}" if party \
            else f"{agent} asks for a card"
    if kind == "give":
        return f"{agent} gives back {card_name(a, deck_style)}" if party \
            else f"{agent} gives a card back"
    if kind == "pass":
        return f"{agent} stops asking" if s.phase == E.ASK else \
            (f"{agent} declines the completion" if s.phase == E.COMPLETE else f"{agent} passes")
    cards = ", ".join(card_name(c, deck_style) for c in iter_cards(E.action_cards(s, action)))
    verb = "completes with" if s.phase == E.COMPLETE else "plays"
    return f"{agent} {verb} {cards}"


def _captioned(frame: np.ndarray, caption: str) -> np.ndarray:
    Image, ImageDraw, ImageFont = _pil()
    h = frame.shape[0]
    out = np.empty((h + CAPTION_H, frame.shape[1], 3), dtype=np.uint8)
    out[:h] = frame
    bar = Image.new("RGB", (frame.shape[1], CAPTION_H), (52, 40, 64))
    d = ImageDraw.Draw(bar)
    try:
        font = ImageFont.load_default(size=14)
    except (TypeError, AttributeError, OSError, ImportError):
        font = ImageFont.load_default()
    d.text((16, CAPTION_H / 2), caption, font=font, fill=(244, 240, 250), anchor="lm")
    out[h:] = np.asarray(bar, dtype=np.uint8)
    return out


def replay_frames(replay: dict[str, Any] | str | Path, viewer: str | None = None,
                  deck_style: str = "dragon") -> Iterator[np.ndarray]:
    """The RGB frames of a replay (``len(actions) + 1`` of them), each with a caption bar.

    The replay is checked in full first (a :class:`ReplayError`), and so is ``viewer`` (a
    ``ValueError`` when it is not one of the replay's agents).
    """
    data = _load(replay)
    agents = _check(data, viewer, deck_style)
    return _frames(data, agents, viewer, deck_style)


def _frames(data: dict[str, Any], agents: list[str], viewer: str | None,
            deck_style: str) -> Iterator[np.ndarray]:
    seat = None if viewer is None else agents.index(viewer)
    moves = replay_moves(data)
    total = len(moves)
    said: str | None = "the deal"
    for k, env in iter_replay(data):
        s = env.engine_state
        caption = f"step {k}/{total}" + (f"   {said}" if said else "")
        if k == total and s.phase == E.DONE:
            caption += "   - match over"
        yield _captioned(render_rgb(s, agents, seat, deck_style), caption)
        if k < total:
            agent, action, illegal = moves[k]
            said = (f"{agent} makes an illegal move ({describe(action)}): the match ends"
                    if illegal else _action_text(s, [agent, action], seat, deck_style))


def _to_palette(Image: Any, frame: np.ndarray) -> Any:
    return Image.fromarray(frame).quantize(colors=256, method=Image.Quantize.FASTOCTREE,
                                           dither=Image.Dither.NONE)


def _write(data: dict[str, Any], gif_path: str | Path | None, frames_dir: str | Path | None,
           viewer: str | None, deck_style: str, fps: float) -> tuple[int, list[Path]]:
    Image, _, _ = _pil()
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not fps > 0:
        raise ValueError(f"fps must be a positive number, got {fps!r}")
    agents = _check(data, viewer, deck_style)
    total = len(replay_moves(data)) + 1
    width = max(4, len(str(total - 1)))
    out_dir = None
    if frames_dir is not None:
        out_dir = Path(frames_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
    pngs: list[Path] = []
    gif_frames = []
    for k, frame in enumerate(_frames(data, agents, viewer, deck_style)):
        if out_dir is not None:
            path = out_dir / f"frame_{k:0{width}d}.png"
            Image.fromarray(frame).save(path, format="PNG")
            pngs.append(path)
        if gif_path is not None:
            gif_frames.append(_to_palette(Image, frame))
    if gif_path is not None:
        step_ms = max(20, int(round(1000 / fps)))
        durations = [step_ms] * (len(gif_frames) - 1) + [max(LAST_FRAME_HOLD_MS, 4 * step_ms)]
        gif_frames[0].save(gif_path, format="GIF", save_all=True,
                           append_images=gif_frames[1:], duration=durations, loop=0,
                           disposal=1, optimize=False)
    return total, pngs


def check_gif_name(path: str | Path) -> None:
    """A ``ValueError`` unless ``path`` ends in ``.gif`` (the only format written; PNG frames
    go to a folder with ``--frames-dir``)."""
    if Path(path).suffix.lower() != ".gif":
        raise ValueError(f"{str(path)!r} does not end in .gif: this writes GIF files only "
                         "(for PNG frames use --frames-dir DIR)")


def replay_to_gif(replay_path_or_dict: dict[str, Any] | str | Path, out_path: str | Path,
                  viewer: str | None = None, deck_style: str = "dragon",
                  fps: float = 2) -> int:
    """Write the replay as an animated GIF, one frame per step (``len(actions) + 1`` frames),
    ``fps`` frames a second and a longer hold on the last; returns the number of frames.

    ``viewer`` (an agent of the replay) draws that player's view; ``None`` shows every hand.
    ``out_path`` must end in ``.gif`` (a ``ValueError`` otherwise).
    """
    check_gif_name(out_path)
    return _write(_load(replay_path_or_dict), out_path, None, viewer, deck_style, fps)[0]


def replay_to_frames(replay: dict[str, Any] | str | Path, out_dir: str | Path,
                     viewer: str | None = None, deck_style: str = "dragon") -> list[Path]:
    """Write the replay as numbered PNG frames ``frame_0000.png``, ... in ``out_dir`` (created
    if needed); returns their paths in order."""
    return _write(_load(replay), None, out_dir, viewer, deck_style, 1)[1]


DESCRIPTION = "Draw a saved Dragon's Egg replay as an animated GIF (or PNG frames)."


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog or "python -m dragons_egg.experiments.cli.gif",
                                description=DESCRIPTION)
    add_arguments(p)
    return p


def gif_name(text: str) -> str:
    """An argparse type: an output name ending in ``.gif``."""
    try:
        check_gif_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of this command (also the ``dragons-egg gif`` subcommand's)."""
    p.add_argument("replay", help="replay JSON (env.unwrapped.save_replay(path))")
    p.add_argument("out", type=gif_name, help="the GIF to write (a name ending in .gif)")
    p.add_argument("--viewer", default=None,
                   help="draw this agent's view (e.g. player_0); default: every hand")
    p.add_argument("--deck-style", choices=DECK_STYLES, default=DECK_STYLES[0])
    p.add_argument("--fps", type=positive_float, default=2.0, help="frames a second (default 2)")
    p.add_argument("--frames-dir", default=None,
                   help="also write every frame as a numbered PNG in this folder")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing GIF, and the frames already in --frames-dir "
                   "(without it either is an error, before anything is drawn)")


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = build_parser(prog)
    return run_from_args(parser.parse_args(argv), parser)


def _claim_outputs(out: str | Path, frames_dir: str | Path | None, overwrite: bool) -> None:
    """A ``ValueError`` when ``out`` exists or ``frames_dir`` holds frames of an earlier
    drawing, unless ``overwrite``: then those frames are removed first, so that a shorter
    replay's frames never mix with a longer one's. A rerun never writes over a picture
    unasked."""
    gif = Path(out)
    if gif.is_dir():
        raise ValueError(f"{out} is a folder, not a file")
    if gif.exists() and not overwrite:
        raise ValueError(f"{out} exists: give another name, or --overwrite to replace it")
    if frames_dir is not None:
        folder = claim_output(frames_dir, [FRAME_GLOB], overwrite=overwrite, what="frames")
        for old in folder.glob(FRAME_GLOB):
            old.unlink()


def run_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None
                  ) -> int:
    """Run with parsed arguments (``dragons-egg gif``). A bad replay, viewer or output path is
    a usage error of ``parser`` (one line, exit status 2); without a parser it is printed as
    ``error: ...`` and 2 returned. Without the ``render`` extra (Pillow) it prints one line
    naming it and exits with status 2 before reading anything."""
    require_cli(parser.prog if parser is not None else "python -m dragons_egg.experiments.cli.gif",
                "render")
    try:
        _claim_outputs(args.out, args.frames_dir, args.overwrite)
        data = load_replay(args.replay)
        frames, pngs = _write(data, args.out, args.frames_dir, args.viewer, args.deck_style,
                              args.fps)
    except (ReplayError, ValueError, ImportError, OSError) as exc:
        if parser is not None:
            parser.error(str(exc))
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({frames} frames, {args.fps:g} fps)"
          + (f" and {len(pngs)} PNG frames in {args.frames_dir}" if args.frames_dir else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["replay_to_gif", "replay_to_frames", "replay_frames", "main"]
