"""The web app without a browser (Starlette's TestClient, issue 51): the frames a replay's
viewer draws against the engine and the observations, the checker's error for a tampered
replay, the root that cannot be escaped, a tournament's matches with their scores, the Play
API (consent, illegal moves, the payload rule, the saved replay), the Runs page, the
single-file replay and the serve command's options."""

import json
import re
import warnings
from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("httpx")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette 1.x prefers httpx2 for its TestClient
    from starlette.testclient import TestClient

from webcheck import engine_steps, exact, leaks, seat_steps, states_of  # noqa: E402

from dragons_egg.experiments.cli.main import main as cli_main  # noqa: E402
from dragons_egg.experiments.evaluation.tournament.output import (  # noqa: E402
    read_result_lines,
)
from dragons_egg.experiments.web import serve  # noqa: E402
from dragons_egg.experiments.web.app import make_app  # noqa: E402
from dragons_egg.experiments.web.paths import OutsideRoot, resolve_under  # noqa: E402
from dragons_egg_env.replay import ReplayError, check_replay, load_replay  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def client(site, tmp_path_factory):
    saves = tmp_path_factory.mktemp("saves")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = TestClient(make_app(site, saves))
    c.saves = saves
    return c


def test_the_frames_draw_the_engine_state_and_each_seat_its_observation(client, site):
    res = client.get("/api/frames", params={"path": "replays/match.json"})
    assert res.status_code == 200
    data = res.json()
    replay = load_replay(site / "replays" / "match.json")
    want = engine_steps(replay)
    frames = data["frames"]
    assert len(frames) == len(replay["actions"]) + 1 == len(want)
    for k, (f, w) in enumerate(zip(frames, want, strict=True)):
        view = f["all"]
        assert (f["step"], view["round"], view["phase"], view["to_act"]) == \
            (k, w["round"], w["phase"], w["to_act"])
        assert view["pile"] == w["pile"] and view["egg_holder"] == w["egg"]
        assert [s["hand"] for s in view["seats"]] == w["hands"]
        assert [s["score"] for s in view["seats"]] == w["scores"]
    for seat in range(4):
        for f, w in zip(frames, seat_steps(replay, seat), strict=True):
            view = f["seats"][seat]
            assert view["viewer"] == seat
            assert [s["hand"] for s in view["seats"]] == [
                w["hand"] if q == seat else None for q in range(4)]
            assert [s["hand_size"] for s in view["seats"]] == w["sizes"]
            assert view["egg_holder"] == w["egg"] and view["pile"] == w["pile"]
    assert data["meta"]["scores"] == replay["scores"]
    assert exact(replay["scores"]) == pytest.approx([s["score"] for s in
                                                     frames[-1]["all"]["seats"]])
    assert data["meta"]["tribute_starts"] and \
        frames[data["meta"]["tribute_starts"][0]]["phase"] == "ask"


def test_a_tampered_replay_is_the_checkers_error_and_never_drawn(client, site):
    with pytest.raises(ReplayError) as caught:
        check_replay(site / "replays" / "tampered.json")
    message = str(caught.value).replace(str(site / "replays" / "tampered.json"),
                                        "replays/tampered.json")
    res = client.get("/api/frames", params={"path": "replays/tampered.json"})
    assert res.status_code == 422
    assert res.json()["error"] == message
    assert res.json()["step"] == caught.value.step or res.json()["field"] == caught.value.field
    page = client.get("/replay", params={"path": "replays/tampered.json"})
    assert page.status_code == 422
    assert "replay-data" not in page.text and "startReplay(" not in page.text
    assert message.replace("'", "&#x27;") in page.text


@pytest.mark.parametrize("path", ["../outside/secret.json", "replays/../../outside/secret.json",
                                  "link/secret.json", "link.json", "link", "/etc/passwd",
                                  "OUTSIDE_ABS"])
@pytest.mark.parametrize("route", ["/replay", "/api/frames", "/file", "/run", "/tournament"])
def test_the_root_cannot_be_escaped(client, site, path, route):
    if path == "OUTSIDE_ABS":
        path = str(site.parent / "outside" / "secret.json")
    res = client.get(route, params={"path": path})
    assert res.status_code == 403, res.text[:200]
    assert "secret" not in res.text.replace(path, "") or route == "/replay"
    assert '"dragons-egg-replay"' not in res.text and "dragons-egg-frames" not in res.text


def test_resolve_under_names_why(site):
    with pytest.raises(OutsideRoot, match="absolute"):
        resolve_under(site, "/etc/passwd")
    with pytest.raises(OutsideRoot, match=r"'\.\.'"):
        resolve_under(site, "a/../../b")
    with pytest.raises(OutsideRoot, match="symlink"):
        resolve_under(site, "link.json")
    assert resolve_under(site, "replays/match.json") == (site / "replays" / "match.json")


def test_the_listing_shows_the_replays_inside_and_no_link_out(client):
    text = client.get("/replays").text
    assert "replays/match.json" in text and "replays/tampered.json" in text
    assert "secret" not in text and "link.json" not in text
    assert 'href="/tournament?path=tourney"' in text
    assert "replays/seq0-rot0.json.gz" not in text  # listed under its tournament


def test_a_tournament_lists_every_match_with_its_scores_and_replay(client, site):
    text = client.get("/tournament", params={"path": "tourney"}).text
    lines = read_result_lines(site / "tourney")
    assert len(lines) == 4
    for r in lines:
        href = f'/replay?path=tourney/{r["replay"]}'
        assert href in text
        shown = " ".join(f"{x:+.3f}" for x in r["scores"])
        assert f'data-scores="{shown}"' in text
        frames = client.get("/api/frames", params={"path": f"tourney/{r['replay']}"}).json()
        assert exact(frames["meta"]["scores"]) == pytest.approx(r["scores"])
        assert frames["frames"][-1]["phase"] == "done"


def _first_legal_match(client, settings):
    res = client.post("/api/play", json=settings)
    assert res.status_code == 200, res.text
    payloads = [res.json()]
    while not payloads[-1]["done"]:
        legal = payloads[-1]["legal"]
        assert legal, payloads[-1]
        res = client.post(f"/api/play/{payloads[-1]['id']}/move",
                          json={"action": legal[-1]["action"]})
        assert res.status_code == 200, res.text
        payloads.append(res.json())
    return payloads


def test_a_match_played_through_the_api_is_saved_and_sends_only_the_seats_view(client):
    payloads = _first_legal_match(client, {"players": 3, "rounds": 2, "seed": 4, "seat": 1,
                                           "bots": ["heuristic", "greedy"], "hints": True})
    final = payloads[-1]
    saved = Path(final["saved"])
    assert saved.parent == client.saves
    check = check_replay(saved)
    assert check.finished and check.complete
    replay = load_replay(saved)
    states = states_of(replay)
    moves = [(int(a[len("player_"):]), b) for a, b in replay["actions"]]
    for p in payloads:
        assert leaks(p, states, moves, 1) == []
        assert [s["hand"] is None for s in p["view"]["seats"]] == [True, False, True]
    assert any(p["hints"] for p in payloads)
    for p in payloads:
        if p["hints"]:
            assert {h["action"] for h in p["hints"]} == {m["action"] for m in p["legal"]}
            assert sum(h["p"] for h in p["hints"]) == pytest.approx(1, abs=1e-3)
    assert exact(replay["scores"]) == pytest.approx([s["score"] for s in final["view"]["seats"]])


def test_the_leak_check_finds_a_hidden_card(client, site):
    """The payload check can fail: a payload holding another seat's hand is caught."""
    replay = load_replay(site / "replays" / "match.json")
    states = states_of(replay)
    moves = [(int(a[len("player_"):]), b) for a, b in replay["actions"]]
    res = client.get("/api/frames", params={"path": "replays/match.json"}).json()
    bad = {"step": 3, "view": res["frames"][3]["all"], "legal": [], "log": []}
    assert leaks(bad, states, moves, 0)
    fine = {"step": 3, "view": res["frames"][3]["seats"][0], "legal": [], "log": []}
    assert leaks(fine, states, moves, 0) == []


def test_leaving_saves_a_partial_replay(client):
    res = client.post("/api/play", json={"players": 4, "rounds": 1, "seed": 9, "seat": 2})
    sid = res.json()["id"]
    left = client.post(f"/api/play/{sid}/leave").json()
    assert left["left"] and not left["done"] and left["legal"] == []
    check = check_replay(left["saved"])
    assert check.partial and check.steps == left["step"]
    assert client.post(f"/api/play/{sid}/move", json={"action": 0}).status_code == 400


@pytest.mark.parametrize("body,needle", [
    ({"bots": ["no-such-agent"]}, "no-such-agent"),
    ({"bots": ["dragons_egg.agents.simple:RandomAgent"]}, "--allow-code"),
    ({"players": 9}, "num_players"),
    ({"seat": 5, "players": 3}, "seat must be 0..2"),
    ({"rules": {"pass_locks_out": "perhaps"}}, "pass_locks_out"),
    ({"seed": -1}, "seed must be >= 0"),
])
def test_a_bad_play_setting_is_one_line(client, body, needle):
    res = client.post("/api/play", json=body)
    assert res.status_code == 400
    error = res.json()["error"]
    assert needle in error and "\n" not in error and "Traceback" not in error


def test_the_play_page_refuses_an_illegal_move(client):
    first = client.post("/api/play", json={"players": 2, "rounds": 1, "seed": 1}).json()
    legal = {m["action"] for m in first["legal"]}
    illegal = next(a for a in range(134) if a not in legal)
    res = client.post(f"/api/play/{first['id']}/move", json={"action": illegal})
    assert res.status_code == 400 and "not one of your legal moves" in res.json()["error"]
    again = client.get(f"/api/play/{first['id']}").json()
    assert again["step"] == first["step"]
    assert client.post("/api/play/nope/move", json={"action": 0}).status_code == 404


def test_allowed_code_runs_with_serves_consent(site, tmp_path):
    spec = "dragons_egg.agents.simple:RandomAgent"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = TestClient(make_app(site, tmp_path, allow_code=(spec,)))
    res = c.post("/api/play", json={"players": 2, "rounds": 1, "bots": [spec]})
    assert res.status_code == 200, res.text
    assert res.json()["labels"][1] != "you"


def test_the_runs_page_renders_the_report_with_its_plots_and_the_learning_curve(client):
    assert 'href="/run?path=tourney"' in client.get("/runs").text
    text = client.get("/run", params={"path": "tourney"}).text
    assert "<table>" in text and "Tournament report" in text
    images = re.findall(r'<img[^>]+src="([^"]+)"', text)
    assert images and all(src.startswith("/file?path=tourney/") for src in images)
    for src in images:
        res = client.get(src.replace("&amp;", "&"))
        assert res.status_code == 200 and res.content[:4] == b"\x89PNG"
    curve = client.get("/run", params={"path": "run"}).text
    assert 'data-series="mean_score" data-points="3"' in curve
    assert 'data-series="diff_heuristic" data-points="3"' in curve
    assert client.get("/file", params={"path": "tourney/config.json"}).status_code == 404


def test_the_single_file_replay_needs_nothing_else(site, tmp_path, capsys):
    out = tmp_path / "m.html"
    assert cli_main(["replay", str(site / "replays" / "match.json"), "--html", str(out)]) == 0
    text = out.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert "<link" not in text and "fetch(" not in text
    assert str(site) not in text  # no local path in the file
    data = json.loads(re.search(r'<script id="replay-data" type="application/json">(.*?)'
                                r"</script>", text, re.S).group(1))
    assert len(data["frames"]) == len(load_replay(site / "replays" / "match.json")["actions"]) + 1
    with pytest.raises(SystemExit) as exc:
        cli_main(["replay", str(site / "replays" / "tampered.json"), "--html",
                  str(tmp_path / "t.html")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "step" in err or "field" in err
    assert not (tmp_path / "t.html").exists()


def test_load_replay_reads_a_tournaments_gzip_replay(site):
    line = read_result_lines(site / "tourney")[0]
    data = load_replay(site / "tourney" / line["replay"])
    assert [float(Fraction(x)) for x in data["scores"]] == pytest.approx(line["scores"])


@pytest.mark.parametrize("argv,needle", [
    (["--root", "NO_SUCH_DIR"], "not a folder"),
    (["--port", "70000"], "--port must be 0..65535"),
    (["--host", "no.such.host.invalid", "--port", "0"], "cannot listen"),
])
def test_serve_refuses_bad_options_in_one_line(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        serve.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_a_host_other_than_loopback_is_warned_about(site, monkeypatch, capsys):
    """The warning names what is exposed; the test binds loopback only (the socket is
    replaced), and the server's run returns at once."""
    import socket

    import uvicorn

    def loopback(host, port, parser):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        return s

    monkeypatch.setattr(serve, "_bind", loopback)
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    assert serve.main(["--root", str(site), "--host", "0.0.0.0", "--port", "0"]) == 0
    captured = capsys.readouterr()
    assert "warning: serving on 0.0.0.0" in captured.err
    assert str(site.resolve()) in captured.err and "play matches" in captured.err
    assert captured.out.startswith("serving http://127.0.0.1:")
    assert serve.is_loopback("127.0.0.1") and serve.is_loopback("::1")
    assert serve.is_loopback("localhost") and not serve.is_loopback("0.0.0.0")


def test_a_match_ended_by_an_illegal_move_and_a_partial_one_are_drawn_to_their_end(client,
                                                                                   site):
    from dragons_egg_env import dragons_egg_v0
    from dragons_egg_env.replay import partial_replay

    env = dragons_egg_v0.env(num_players=3, num_rounds=1)
    env.reset(seed=2)
    for _ in range(4):
        env.step(env.legal_actions()[0])
    illegal = next(a for a in range(134) if a not in env.legal_actions())
    who = env.agent_selection
    env.step(illegal)
    (site / "replays" / "illegal.json").write_text(json.dumps(env.to_replay()))
    data = client.get("/api/frames", params={"path": "replays/illegal.json"}).json()
    assert data["meta"]["illegal_move"] == [who, illegal]
    assert "illegal move" in data["frames"][-2]["next"]["all"]
    assert data["frames"][-1]["next"] is None and len(data["frames"]) == 6
    cut = partial_replay(load_replay(site / "replays" / "match.json"), 20)
    (site / "replays" / "cut.json").write_text(json.dumps(cut))
    data = client.get("/api/frames", params={"path": "replays/cut.json"}).json()
    assert len(data["frames"]) == 21 and not data["meta"]["finished"]


def test_under_ci_a_missing_browser_fails_the_browser_tests_and_else_skips(tmp_path):
    """``CI=true`` turns the skip of a missing browser into a failure that says why."""
    import os
    import subprocess
    import sys

    here = Path(__file__).parent
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist",
            "-p", "no:cacheprovider", str(here / "test_web_browser.py"), "-k",
            "test_the_root_cannot_be_escaped_in_the_browser and etc", "--rootdir", str(here)]
    env = {**os.environ, "DRAGONS_EGG_CHROMIUM": str(tmp_path / "no-chromium")}
    env.pop("CI", None)
    skipped = subprocess.run(base, env=env, capture_output=True, text=True, timeout=300)
    assert skipped.returncode == 0 and "skipped" in skipped.stdout, skipped.stdout[-800:]
    failed = subprocess.run(base, env={**env, "CI": "true"}, capture_output=True, text=True,
                            timeout=300)
    assert failed.returncode == 1, failed.stdout[-800:]
    assert "CI=true and the browser tests cannot run: no Chromium at" in failed.stdout


def test_play_requests_must_be_json_and_a_loopback_server_answers_its_own_names(site,
                                                                             tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = TestClient(make_app(site, tmp_path, hosts=("127.0.0.1", "localhost")),
                       base_url="http://127.0.0.1:8765")
        other = TestClient(make_app(site, tmp_path, hosts=("127.0.0.1", "localhost")),
                           base_url="http://evil.example:8765")
    res = c.post("/api/play", content='{"players": 2}', headers={"content-type": "text/plain"})
    assert res.status_code == 415 and "application/json" in res.json()["error"]
    assert c.post("/api/play", json={"players": 2, "rounds": 1}).status_code == 200
    assert other.get("/replays").status_code == 400
    assert other.post("/api/play", json={"players": 2}).status_code == 400
