"""The web app of ``dragons-egg serve``: a Starlette application over one folder (the root).

Pages: ``/replays`` (the replays and tournaments under the root), ``/replay?path=`` (the
viewer, or the replay checker's error), ``/tournament?path=`` (a tournament's matches),
``/play`` (a match against the bots), ``/runs`` and ``/run?path=`` (a tournament's report,
a training run's learning curve). JSON: ``/api/frames?path=`` (a replay's frames) and the
Play page's ``/api/play`` routes. ``/file?path=`` serves the images a report shows. Every
``path`` is relative to the root and checked by :func:`~.paths.resolve_under` (403
otherwise).
"""

from __future__ import annotations

import contextlib
import csv
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from dragons_egg.experiments.evaluation.tournament.output import OutputError
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.replay import ReplayError

from .frames import replay_frames
from .game import PlayError, PlaySession, PlaySettings, Sessions
from .pages import error_page, esc, shell, table, viewer_page
from .paths import (
    OutsideRoot,
    read_json,
    relative,
    resolve_under,
    scan_root,
    tournament_matches,
)
from .runs import learning_curve_svg, read_eval_csv, report_html

#: The image types ``/file`` serves (a report's plots).
SERVED_FILES = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}


def q(path: str) -> str:
    """A path quoted for a query string."""
    return urllib.parse.quote(path, safe="/")


def _fmt(x: float) -> str:
    return f"{x:+.3f}"


class WebApp:
    """The served folder and the matches in play; :meth:`app` is the ASGI application."""

    def __init__(self, root: str | Path, save_dir: str | Path | None = None,
                 allow_code: tuple[str, ...] = ()) -> None:
        self.root = Path(root).resolve()
        self.save_dir = Path(save_dir).resolve() if save_dir else self.root / "played"
        self.sessions = Sessions(self.save_dir, allow_code)

    # -- helpers --------------------------------------------------------------------------
    def _path(self, request: Request) -> tuple[str, Path]:
        rel = request.query_params.get("path", "")
        return rel, resolve_under(self.root, rel)

    def _forbidden(self, exc: OutsideRoot, json_body: bool = False) -> Response:
        if json_body:
            return JSONResponse({"error": str(exc)}, status_code=403)
        return HTMLResponse(error_page("Not served", str(exc)), status_code=403)

    def _missing(self, rel: str) -> Response:
        return HTMLResponse(error_page("Not found", f"{rel!r} is not in the served folder"),
                            status_code=404)

    # -- pages ----------------------------------------------------------------------------
    async def home(self, request: Request) -> Response:
        return RedirectResponse("/replays")

    async def replays(self, request: Request) -> Response:
        listing = await run_in_threadpool(scan_root, self.root)
        rows = [[f'<a class="replay-link" href="/replay?path={q(r)}">{esc(r)}</a>']
                for r in listing.replays]
        trows = [[f'<a class="tournament-link" href="/tournament?path={q(t)}">'
                  f'{esc(t or ".")}</a>', self._agents_of(self.root / t)]
                 for t in listing.tournaments]
        body = (f"<h1>Replays</h1><p class=\"muted\">under {esc(self.root)}"
                + (" (listing cut short: too many files)" if listing.truncated else "")
                + "</p><h2>Tournaments</h2>"
                + (table(["folder", "agents"], trows) if trows else
                   "<p class=\"muted\">none (a folder with config.json and results.jsonl)</p>")
                + "<h2>Replay files</h2>"
                + (table(["file"], rows) if rows else "<p class=\"muted\">none</p>"))
        return HTMLResponse(shell("Replays", body, here="/replays"))

    def _agents_of(self, folder: Path) -> str:
        cfg = read_json(folder / "config.json")
        agents = cfg.get("agents", []) if isinstance(cfg, dict) else []
        return esc(", ".join(a if isinstance(a, str) else str(a.get("label", "?"))
                             for a in agents))

    async def tournament(self, request: Request) -> Response:
        try:
            rel, folder = self._path(request)
        except OutsideRoot as exc:
            return self._forbidden(exc)
        try:
            matches = await run_in_threadpool(tournament_matches, folder)
        except (OutputError, OSError) as exc:
            return HTMLResponse(error_page("Not a tournament", str(exc), back="/replays"),
                                status_code=404)
        rows = []
        for m in matches:
            link = (f'<a class="match-link" href="/replay?path={q(rel + "/" + m["replay"])}">'
                    "watch</a>" if m["replay"] else
                    '<span class="muted">no replay (run with --save-replays)</span>')
            scores = " ".join(_fmt(x) for x in m["scores"])
            rows.append([str(m["sequence"]), str(m["rotation"]), esc(", ".join(m["seats"])),
                         f'<span class="scores" data-scores="{esc(scores)}">{esc(scores)}'
                         "</span>" + (" (forfeit)" if m["forfeit"] else ""), link])
        report = (f' · <a href="/run?path={q(rel)}">report</a>'
                  if (folder / "report.md").is_file() else "")
        body = (f'<p><a href="/replays">&larr; replays</a>{report}</p>'
                f"<h1>Tournament {esc(rel)}</h1><p>{len(matches)} matches</p>"
                + table(["sequence", "rotation", "seats", "scores (results.jsonl)", "replay"],
                        rows))
        return HTMLResponse(shell(f"Tournament {rel}", body, here="/replays"))

    async def replay(self, request: Request) -> Response:
        try:
            rel, path = self._path(request)
        except OutsideRoot as exc:
            return self._forbidden(exc)
        if not path.is_file():
            return self._missing(rel)
        try:
            frames = await run_in_threadpool(replay_frames, path)
            frames["meta"]["check"] = frames["meta"]["check"].replace(str(path), rel)
        except ReplayError as exc:
            return HTMLResponse(error_page("This replay does not verify",
                                           str(exc).replace(str(path), rel), back="/replays"),
                                status_code=422)
        return HTMLResponse(viewer_page(frames, rel, back="/replays"))

    async def frames(self, request: Request) -> Response:
        try:
            rel, path = self._path(request)
        except OutsideRoot as exc:
            return self._forbidden(exc, json_body=True)
        if not path.is_file():
            return JSONResponse({"error": f"{rel!r} is not a file"}, status_code=404)
        try:
            data = await run_in_threadpool(replay_frames, path)
        except ReplayError as exc:
            return JSONResponse({"error": str(exc).replace(str(path), rel),
                                 "step": exc.step, "field": exc.field}, status_code=422)
        return JSONResponse(data)

    async def file(self, request: Request) -> Response:
        try:
            rel, path = self._path(request)
        except OutsideRoot as exc:
            return self._forbidden(exc)
        kind = SERVED_FILES.get(path.suffix.lower())
        if kind is None or not path.is_file():
            return self._missing(rel)
        return FileResponse(path, media_type=kind)

    async def runs(self, request: Request) -> Response:
        listing = await run_in_threadpool(scan_root, self.root)
        trows = [[f'<a class="run-link" href="/run?path={q(t)}">{esc(t or ".")}</a>',
                  "tournament"] for t in listing.tournaments
                 if (self.root / t / "report.md").is_file()]
        rrows = [[f'<a class="run-link" href="/run?path={q(r)}">{esc(r or ".")}</a>',
                  "training run"] for r in listing.runs]
        rows = trows + rrows
        body = ("<h1>Runs</h1><p class=\"muted\">tournament reports and training runs' "
                "learning curves (read-only)</p>"
                + (table(["folder", "kind"], rows) if rows else "<p class=\"muted\">none</p>"))
        return HTMLResponse(shell("Runs", body, here="/runs"))

    async def run(self, request: Request) -> Response:
        try:
            rel, folder = self._path(request)
        except OutsideRoot as exc:
            return self._forbidden(exc)
        parts = []
        prefix = f"/file?path={q(rel + '/' if rel else '')}"
        if (folder / "report.md").is_file():
            parts.append('<div class="report" id="report">'
                         f"{await run_in_threadpool(report_html, folder, prefix)}</div>")
        if (folder / "eval.csv").is_file():
            try:
                cols = await run_in_threadpool(read_eval_csv, folder / "eval.csv")
            except (OSError, ValueError, csv.Error) as exc:
                return HTMLResponse(error_page("Cannot read eval.csv", str(exc)), 422)
            parts.append("<h2>Learning curve (eval.csv)</h2>" + learning_curve_svg(cols))
            if (folder / "learning_curve.png").is_file():
                parts.append(f'<p class="muted">the run\'s own plot: <a href="{prefix}'
                             'learning_curve.png">learning_curve.png</a></p>')
        if not parts:
            return HTMLResponse(error_page("Nothing to show", f"{rel!r} holds no report.md and "
                                           "no eval.csv", here="/runs"), status_code=404)
        body = f'<p><a href="/runs">&larr; runs</a></p><h1>{esc(rel or ".")}</h1>' + \
            "".join(parts)
        return HTMLResponse(shell(f"Run {rel}", body, here="/runs"))

    async def play(self, request: Request) -> Response:
        return HTMLResponse(shell("Play", play_form(), here="/play",
                                  scripts=("viewer.js", "play.js")))

    # -- the Play page's API ----------------------------------------------------------------
    def _payload(self, session: PlaySession) -> dict[str, Any]:
        data = session.payload()
        saved = session.saved
        if saved is not None and (saved == self.root or self.root in saved.parents):
            rel = relative(self.root, saved)
            data["saved"] = rel
            data["replay_url"] = f"/replay?path={q(rel)}"
        return data

    async def api_new(self, request: Request) -> Response:
        refused = _not_json(request)
        if refused is not None:
            return refused
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise PlayError("the request body is a JSON object of settings")
            settings = PlaySettings.from_json(body)
            session = await run_in_threadpool(self.sessions.new, settings)
        except (PlayError, ValueError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(self._payload(session))

    async def api_move(self, request: Request) -> Response:
        try:
            session = self.sessions.get(request.path_params["sid"])
        except KeyError:
            return JSONResponse({"error": "no such match (the server restarted?)"}, 404)
        refused = _not_json(request)
        if refused is not None:
            return refused
        try:
            body = await request.json()
        except ValueError:
            body = None
        action = body.get("action") if isinstance(body, dict) else None

        def move() -> dict[str, Any]:
            with session.lock:
                session.move(action)
                return self._payload(session)
        try:
            return JSONResponse(await run_in_threadpool(move))
        except PlayError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    async def api_leave(self, request: Request) -> Response:
        try:
            session = self.sessions.get(request.path_params["sid"])
        except KeyError:
            return JSONResponse({"error": "no such match"}, 404)

        def leave() -> dict[str, Any]:
            with session.lock:
                if not session.done and not session.left:
                    session.leave()
                return self._payload(session)
        return JSONResponse(await run_in_threadpool(leave))

    async def api_state(self, request: Request) -> Response:
        try:
            session = self.sessions.get(request.path_params["sid"])
        except KeyError:
            return JSONResponse({"error": "no such match"}, 404)
        with session.lock:
            return JSONResponse(self._payload(session))

    def app(self, hosts: tuple[str, ...] = ()) -> Starlette:
        """The ASGI application; with ``hosts``, requests naming another host in their
        ``Host`` header are refused (a page of another site that reaches this server through
        a name of its own, DNS rebinding, gets nothing)."""
        middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))] \
            if hosts else []
        return Starlette(middleware=middleware, routes=[
            Route("/", self.home), Route("/replays", self.replays),
            Route("/tournament", self.tournament), Route("/replay", self.replay),
            Route("/api/frames", self.frames), Route("/file", self.file),
            Route("/runs", self.runs), Route("/run", self.run), Route("/play", self.play),
            Route("/api/play", self.api_new, methods=["POST"]),
            Route("/api/play/{sid}", self.api_state),
            Route("/api/play/{sid}/move", self.api_move, methods=["POST"]),
            Route("/api/play/{sid}/leave", self.api_leave, methods=["POST"]),
        ], lifespan=self._lifespan)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """The server's life: when it stops, the matches still in play are saved."""
        try:
            yield
        finally:
            await run_in_threadpool(self.sessions.leave_all)


def _not_json(request: Request) -> Response | None:
    """A 415 for a request to start or move that is not JSON: a form or text another site's
    page could send without the browser asking this server first."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        return JSONResponse({"error": "send the request as application/json"},
                            status_code=415)
    return None


def play_form() -> str:
    """The Play page's settings form (every rule flag, from RulesConfig's metadata) and the
    game area that play.js fills."""
    fields = []
    for name in RulesConfig.field_names():
        if name in ("num_players", "num_rounds"):
            continue
        info = RulesConfig.flag_info(name)
        title = esc(f"{info['rule']}: {info['meaning']}")
        if info["kind"] == "bool":
            checked = " checked" if info["default"] else ""
            control = f'<input type="checkbox" data-flag="{name}"{checked}>'
        elif info["kind"] == "int":
            control = (f'<input type="number" data-flag="{name}" value="{info["default"]}" '
                       f'min="{info.get("low", 0)}"'
                       + (f' max="{info["high"]}"' if info.get("high") is not None else "")
                       + ">")
        else:
            options = "".join(f'<option{" selected" if c == info["default"] else ""}>{c}'
                              "</option>" for c in info["choices"])
            control = f'<select data-flag="{name}">{options}</select>'
        fields.append(f'<label title="{title}">{esc(name)} ({info["rule"]}) {control}</label>')
    players = "".join(f'<option{" selected" if n == 4 else ""}>{n}</option>'
                      for n in range(2, 9))
    return (
        "<h1>Play against the bots</h1>"
        '<form class="setup" id="setup">'
        f'<label>players <select id="players">{players}</select></label>'
        '<label>rounds <input type="number" id="rounds" value="3" min="1"></label>'
        '<label>your seat <input type="number" id="seat" value="0" min="0" max="7"></label>'
        '<label>seed <input type="number" id="seed" value="0" min="0"></label>'
        '<label title="agent specs for the other seats, used in turn: random, greedy, '
        "heuristic, ismcts:iterations=N, ppo, ppo:path=FILE, MODULE:CLASS (needs dragons-egg"
        ' serve --allow-code SPEC)">bots (specs) <input id="bots" value="heuristic"></label>'
        '<label>hints (the shipped network\'s move probabilities) '
        '<input type="checkbox" id="hints"></label>'
        + "".join(fields)
        + '<label>&nbsp;<button class="big" id="start" type="submit">Start a match</button>'
        "</label></form>"
        '<div class="error" id="play-error" style="display:none"></div>'
        '<div id="game" style="display:none">'
        '<p id="status"></p><div id="table"></div><div class="moves" id="moves"></div>'
        '<div class="controls"><button id="leave">Leave (saves the match)</button></div>'
        '<h2>What happened</h2><div class="log" id="log"></div>'
        '<div id="play-results"></div></div>')


def make_app(root: str | Path, save_dir: str | Path | None = None,
             allow_code: tuple[str, ...] = (), hosts: tuple[str, ...] = ()) -> Starlette:
    """The ASGI application serving ``root`` (Play saves under ``save_dir``, default
    ``root/played``; ``allow_code``: the specs that may run code; ``hosts``: the only
    ``Host`` headers answered, when given)."""
    return WebApp(root, save_dir, allow_code).app(hosts)


__all__ = ["WebApp", "make_app", "play_form", "SERVED_FILES"]
