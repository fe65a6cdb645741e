"""``dragons-egg serve``: the web app on a local port, and the single-file replay of
``dragons-egg replay FILE --html OUT.html``.

``serve`` binds ``127.0.0.1`` unless ``--host`` is given; a host that is not a loopback
address prints a warning naming what it exposes (every file of the pages under ``--root``,
and a Play page that runs bots on this machine). ``--port 0`` picks a free port. The URL is
printed once the server listens (``serving http://127.0.0.1:PORT/ ...``), and Ctrl-C or
SIGTERM stops it, saving the matches still in play.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from pathlib import Path

from dragons_egg.agents.consent import CONSENT_FLAG
from dragons_egg.experiments.common.files import write_atomically
from dragons_egg_env.extras import require_cli
from dragons_egg_env.replay import ReplayError

from .frames import replay_frames
from .pages import viewer_page

DESCRIPTION = ("Serve replays, a play page against the bots and run reports in the browser, "
               "from one folder (read-only, but for the matches played).")


def write_html_replay(replay: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Write the replay viewer with the replay's frames as one self-contained HTML file (its
    script and style inline; nothing fetched). The replay is checked first: a
    :class:`~dragons_egg_env.replay.ReplayError` and no file when it does not verify."""
    frames = replay_frames(replay)
    meta = frames["meta"]
    meta["check"] = meta["check"].replace(os.fspath(replay), Path(replay).name)  # no local path
    page = viewer_page(frames, f"Dragon's Egg replay: {Path(replay).name}", nav=False)
    target = Path(out)
    write_atomically(target, page)
    return target


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog or "python -m dragons_egg.experiments.web.serve",
                                description=DESCRIPTION)
    p.add_argument("--root", default=".",
                   help="the folder served: its replays, tournaments and runs (default: the "
                   "current folder); nothing outside it is served")
    p.add_argument("--port", type=int, default=8765,
                   help="the port (default 8765; 0 picks a free one and prints it)")
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to bind (default 127.0.0.1, this machine only)")
    p.add_argument("--save-dir", default=None,
                   help="where the Play page saves its matches (default ROOT/played)")
    p.add_argument(CONSENT_FLAG, metavar="SPEC", action="append", default=[],
                   help="allow the Play page to run this agent spec, which runs code "
                   "(trust=1, rllib:path=, MODULE:CLASS); again for more")
    return p


def _bind(host: str, port: int, parser: argparse.ArgumentParser) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except (OSError, OverflowError) as exc:
        sock.close()
        parser.error(f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}")
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the server until Ctrl-C or SIGTERM; a bad option is one line and exit status 2."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    require_cli(parser.prog, "web")
    root = Path(args.root)
    if not root.is_dir():
        parser.error(f"--root {args.root}: not a folder")
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, got {args.port}")
    if args.save_dir and Path(args.save_dir).exists() and not Path(args.save_dir).is_dir():
        parser.error(f"--save-dir {args.save_dir}: not a folder")
    import uvicorn

    from .app import make_app

    # on loopback, only the names of this machine (no page of another site through DNS
    # rebinding); another --host is reachable under any name the user gives it
    hosts = ("127.0.0.1", "localhost", "::1", "[::1]") if is_loopback(args.host) else ()
    app = make_app(root, args.save_dir, tuple(args.allow_code), hosts)
    sock = _bind(args.host, args.port, parser)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    if not is_loopback(args.host):
        print(f"warning: serving on {args.host}, which other machines can reach: anyone who "
              f"can connect sees every replay, tournament and run under {root.resolve()} and "
              "can play matches that run bots on this machine; use --host 127.0.0.1 to keep "
              "it to this machine", file=sys.stderr)
    saves = Path(args.save_dir) if args.save_dir else root / "played"
    print(f"serving http://{shown}:{port}/ (root {root.resolve()}; Play saves to "
          f"{saves.resolve()}); Ctrl-C stops", flush=True)
    # log_config=None: uvicorn's own logging.config.dictConfig would close every handler
    # already installed in the process (a host program's, pytest's capture); its loggers
    # still log at log_level through the root logger's handlers
    config = uvicorn.Config(app, log_level="warning", lifespan="on", log_config=None)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0


def html_from_args(file: str, out: str, parser: argparse.ArgumentParser) -> int:
    """``dragons-egg replay FILE --html OUT``: the single-file replay; a replay that does not
    verify, or an output that cannot be written, is one line and exit status 2."""
    try:
        path = write_html_replay(file, out)
    except (ReplayError, OSError) as exc:
        parser.error(str(exc))
    print(f"wrote {path} (open it in a browser: it needs no server and no network)")
    return 0


__all__ = ["main", "build_parser", "write_html_replay", "html_from_args", "is_loopback",
           "DESCRIPTION"]


if __name__ == "__main__":
    raise SystemExit(main())
