"""The web pages in a real browser (Debian's headless Chromium through Playwright, issue 51):
stepping through a replay draws the engine's state at every step (all hands) and each seat's
observation (its view); the keyboard steps and plays; a tampered replay shows the checker's
error; a whole match against ``heuristic`` is played by clicks, its saved replay verifies, and
no payload the page received holds another seat's hidden cards; the root cannot be escaped;
the single-file replay works with the network off; the pages fit a phone's width. The
screenshots of the docs page "Watching and playing" are taken here (``make screenshots``)."""

import json
import urllib.parse
from pathlib import Path

import pytest
from webcheck import engine_steps, exact, leaks, seat_steps, states_of

from dragons_egg.experiments.web.serve import write_html_replay
from dragons_egg_env.replay import ReplayError, check_replay, load_replay

READ = """() => {
  const t = document.querySelector('#table');
  return {step: +t.dataset.step, round: +t.dataset.round, phase: t.dataset.phase,
          toAct: +t.dataset.toAct, egg: +t.dataset.eggHolder,
          pile: document.querySelector('#pile').dataset.cards,
          seats: [...t.querySelectorAll('.seat')].map(s => ({
            seat: +s.dataset.seat, hand: s.dataset.hand, size: +s.dataset.handSize,
            score: +s.dataset.score,
            drawn: [...s.querySelectorAll('.card[data-card]')].map(c => c.dataset.card)}))};
}"""


def url(server, route, **query):
    return server["url"] + route + ("?" + urllib.parse.urlencode(query) if query else "")


def test_stepping_through_a_replay_draws_the_engine_state_at_every_step(server, page, shots):
    page.goto(url(server, "/replay", path="replays/match.json"))
    replay = load_replay(server["root"] / "replays" / "match.json")
    want = engine_steps(replay)
    shot = next(k for k, w in enumerate(want) if w["phase"] == "give") + 1  # the tribute shown
    for k, w in enumerate(want):
        got = page.evaluate(READ)
        assert (got["step"], got["round"], got["phase"], got["toAct"], got["egg"]) == \
            (k, w["round"], w["phase"], w["to_act"], w["egg"]), k
        assert got["pile"].split() == w["pile"], k
        assert [s["drawn"] for s in got["seats"]] == w["hands"], k
        assert [s["hand"].split() for s in got["seats"]] == w["hands"], k
        assert [s["score"] for s in got["seats"]] == pytest.approx(w["scores"]), k
        if k == shot:
            page.screenshot(path=str(shots / "replay.png"), full_page=True)
        page.keyboard.press("ArrowRight")
    assert page.evaluate(READ)["step"] == len(want) - 1  # stops at the end
    assert [s["score"] for s in page.evaluate(READ)["seats"]] == \
        pytest.approx(exact(replay["scores"]))
    assert page.locator("#steplabel").text_content() == f"step {len(want) - 1}/{len(want) - 1}"
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(READ)["step"] == len(want) - 2


def test_a_seats_view_draws_its_observation_only(server, page):
    page.goto(url(server, "/replay", path="replays/match.json"))
    replay = load_replay(server["root"] / "replays" / "match.json")
    page.select_option("#seat-view", "2")
    for k, w in enumerate(seat_steps(replay, 2)):
        got = page.evaluate(READ)
        assert got["step"] == k
        assert [s["hand"] for s in got["seats"]] == [
            " ".join(w["hand"]) if q == 2 else "hidden" for q in range(4)], k
        assert [s["drawn"] for s in got["seats"]] == [
            w["hand"] if q == 2 else [] for q in range(4)], k
        assert [s["size"] for s in got["seats"]] == w["sizes"], k
        assert got["egg"] == w["egg"] and got["pile"].split() == w["pile"], k
        page.keyboard.press("ArrowRight")


def test_the_controls_jump_to_a_round_and_the_tribute_and_play(server, page):
    page.goto(url(server, "/replay", path="replays/match.json"))
    page.click("#tribute")
    assert page.evaluate(READ)["phase"] == "ask"
    assert "Tribute:" in page.locator("[data-role=tribute]").text_content()
    page.select_option("#round", label="round 1")
    assert page.evaluate(READ)["step"] == 0
    page.select_option("#speed", "60")
    page.keyboard.press(" ")  # space plays
    page.wait_for_function("+document.querySelector('#table').dataset.step >= 5")
    page.keyboard.press(" ")  # and pauses
    stopped = page.evaluate(READ)["step"]
    page.wait_for_timeout(300)
    assert page.evaluate(READ)["step"] == stopped
    page.keyboard.press("End")
    assert page.evaluate(READ)["phase"] == "done"
    page.keyboard.press("Home")
    assert page.evaluate(READ)["step"] == 0


def test_a_tampered_replay_shows_the_checkers_error(server, page):
    path = server["root"] / "replays" / "tampered.json"
    with pytest.raises(ReplayError) as caught:
        check_replay(path)
    res = page.goto(url(server, "/replay", path="replays/tampered.json"))
    assert res.status == 422
    shown = page.locator("#error").text_content()
    assert shown == str(caught.value).replace(str(path), "replays/tampered.json")
    assert ("step" in shown) or ("field" in shown)
    assert page.locator("#table").count() == 0 and page.locator(".card").count() == 0


def test_a_whole_match_against_heuristic_by_clicks(server, page, shots):
    """Every response the page receives is kept: none holds another seat's hidden cards."""
    bodies = []

    def keep(response):
        if response.url.startswith(server["url"]):
            try:
                bodies.append((response.url, response.text()))
            except Exception:  # noqa: BLE001 - a body the browser no longer holds
                bodies.append((response.url, None))

    page.on("response", keep)
    page.goto(url(server, "/play"))
    page.select_option("#players", "3")
    page.fill("#rounds", "2")
    page.fill("#seed", "7")
    page.fill("#seat", "1")
    page.fill("#bots", "heuristic")
    page.check("#hints")
    with page.expect_response(lambda r: r.url.endswith("/api/play")):
        page.click("#start")
    clicks = 0
    while page.locator("#status").get_attribute("data-done") != "true":
        buttons = page.locator("#moves button.move")
        assert buttons.count() > 0
        if clicks == 6:
            page.screenshot(path=str(shots / "play.png"), full_page=True)
        with page.expect_response(lambda r: r.url.endswith("/move")):
            buttons.nth(clicks % buttons.count()).click()
        clicks += 1
        assert clicks < 400
    page.wait_for_selector("#saved-path")
    saved = Path(page.locator("#saved-path").text_content())
    assert saved.parent == server["save_dir"]
    check = check_replay(saved)
    assert check.finished and check.complete
    replay = load_replay(saved)
    assert replay["config"]["num_players"] == 3 and replay["config"]["num_rounds"] == 2
    human = sum(1 for a, _ in replay["actions"] if a == "player_1")
    assert human >= clicks  # every click a move of seat 1 (passes it had to make included)
    states = states_of(replay)
    moves = [(int(a[len("player_"):]), b) for a, b in replay["actions"]]
    api = [json.loads(body) for u, body in bodies if "/api/play" in u and body]
    assert len(api) == clicks + 1
    for p in api:
        assert leaks(p, states, moves, 1) == []
        assert [s["hand"] is None for s in p["view"]["seats"]] == [True, False, True]
    for u, body in bodies:  # the pages themselves hold no cards at all
        if "/api/" not in u and body is not None:
            assert '"hand"' not in body
    shown = [float(x) for x in page.locator("#table .seat").evaluate_all(
        "els => els.map(e => e.dataset.score)")]
    assert shown == pytest.approx(exact(replay["scores"]))
    page.goto(url(server, "/replay", path=""))  # a bad path is one page, not a crash
    assert page.locator("#error").count() == 1


@pytest.mark.parametrize("path", ["../outside/secret.json", "link.json", "link/secret.json",
                                  "/etc/passwd"])
def test_the_root_cannot_be_escaped_in_the_browser(server, page, path):
    res = page.goto(url(server, "/replay", path=path))
    assert res.status == 403
    assert page.locator("#table").count() == 0
    assert "served folder" in page.locator("#error").text_content()


def test_the_tournament_page_lists_every_match_and_each_steps_to_its_end(server, page, shots):
    page.goto(url(server, "/tournament", path="tourney"))
    links = page.locator("a.match-link")
    assert links.count() == 4
    page.screenshot(path=str(shots / "tournament.png"), full_page=True)
    hrefs = links.evaluate_all("els => els.map(e => e.getAttribute('href'))")
    scores = page.locator(".scores").evaluate_all("els => els.map(e => e.dataset.scores)")
    for href, line_scores in zip(hrefs, scores, strict=True):
        page.goto(server["url"] + href)
        page.keyboard.press("End")
        got = page.evaluate(READ)
        assert got["phase"] == "done"
        assert [f"{s['score']:+.3f}" for s in got["seats"]] == line_scores.split()


def test_the_runs_page_shows_the_report_plots_and_the_learning_curve(server, page, shots):
    page.goto(url(server, "/run", path="tourney"))
    images = page.locator("#report img")
    assert images.count() >= 1
    page.wait_for_load_state("networkidle")
    assert all(w > 0 for w in images.evaluate_all("els => els.map(e => e.naturalWidth)"))
    page.screenshot(path=str(shots / "runs.png"), full_page=True)
    page.goto(url(server, "/run", path="run"))
    assert page.locator("#learning-curve polyline").count() == 2
    page.locator("#learning-curve").screenshot(path=str(shots / "learning-curve.png"))


def test_the_single_file_replay_works_with_the_network_off(server, browser, tmp_path, shots):
    out = write_html_replay(server["root"] / "replays" / "match.json", tmp_path / "m.html")
    context = browser.new_context(offline=True, viewport={"width": 1000, "height": 800})
    asked = []
    context.route("**/*", lambda route: (asked.append(route.request.url),
                                         route.continue_() if route.request.url.startswith(
                                             "file://") else route.abort()))
    page = context.new_page()
    page.goto(out.as_uri())
    assert page.evaluate(READ)["step"] == 0
    for _ in range(12):
        page.keyboard.press("ArrowRight")
    assert page.evaluate(READ)["step"] == 12
    page.keyboard.press("End")
    assert page.evaluate(READ)["phase"] == "done"
    assert asked == [out.as_uri()]  # the one file, nothing else
    context.close()


@pytest.mark.parametrize("path,name", [("/replay?path=replays/match.json", "phone-replay.png"),
                                       ("/play", "phone-play.png")])
def test_the_pages_fit_a_phones_width(server, browser, shots, path, name):
    context = browser.new_context(viewport={"width": 390, "height": 844},
                                  device_scale_factor=2, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(server["url"] + path)
    if path == "/play":
        with page.expect_response(lambda r: r.url.endswith("/api/play")):
            page.click("#start")
        page.wait_for_selector("#moves button.move")
    else:
        for _ in range(20):
            page.click("#next-step")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"{path} is {width}px wide at a 390px viewport"
    page.screenshot(path=str(shots / name), full_page=True)
    context.close()


def test_leaving_the_play_page_saves_the_match(server, page):
    page.goto(url(server, "/play"))
    page.fill("#seed", "31")
    with page.expect_response(lambda r: r.url.endswith("/api/play")) as info:
        page.click("#start")
    sid = info.value.json()["id"]
    page.wait_for_selector("#moves button.move")
    page.goto(url(server, "/replays"))  # pagehide: the page tells the server it leaves
    for _ in range(100):
        saved = list(server["save_dir"].glob(f"play-*-seed31-{sid}.json"))
        if saved:
            break
        page.wait_for_timeout(100)
    assert saved, "leaving the page saved no replay"
    check = check_replay(saved[0])
    assert check.partial and not check.finished
