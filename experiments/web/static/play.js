/* The Play page: a match against the bots. The server holds the match; every response
   carries only this seat's view (its observation), its legal moves, the hints and public
   facts. Only legal moves are drawn as buttons, and the server refuses any other. */
(function () {
  "use strict";
  var DE = window.DE;
  var form = document.getElementById("setup");
  var box = document.getElementById("game");
  var current = null;

  function $(id) { return document.getElementById(id); }

  function post(url, body) {
    return fetch(url, { method: "POST", headers: { "Content-Type": "application/json" },
                        body: JSON.stringify(body || {}) })
      .then(function (r) { return r.json().then(function (d) { return { ok: r.ok, data: d }; }); });
  }

  function settings() {
    var rules = {};
    form.querySelectorAll("[data-flag]").forEach(function (el) {
      var name = el.getAttribute("data-flag");
      if (el.type === "checkbox") rules[name] = el.checked;
      else if (el.type === "number") rules[name] = parseInt(el.value, 10);
      else rules[name] = el.value;
    });
    return {
      players: parseInt($("players").value, 10), rounds: parseInt($("rounds").value, 10),
      seed: parseInt($("seed").value, 10), seat: parseInt($("seat").value, 10),
      bots: $("bots").value.split(/\s+/).filter(Boolean), rules: rules,
      hints: $("hints").checked
    };
  }

  function showError(text) {
    $("play-error").textContent = text || "";
    $("play-error").style.display = text ? "block" : "none";
  }

  function draw() {
    var st = current;
    box.style.display = "block";
    var table = $("table");
    DE.renderView(table, st.view, { names: st.names, next: null });
    table.setAttribute("data-step", st.step);
    table.setAttribute("data-done", st.done);
    var hints = {};
    (st.hints || []).forEach(function (h) { hints[h.action] = h.p; });
    var best = -1, bestP = -1;
    (st.hints || []).forEach(function (h) { if (h.p > bestP) { bestP = h.p; best = h.action; } });
    $("moves").innerHTML = st.legal.map(function (m, i) {
      var hint = m.action in hints ? '<span class="hint">network: ' +
        (100 * hints[m.action]).toFixed(1) + '%</span><span class="bar" style="width:' +
        Math.max(2, Math.round(100 * hints[m.action])) + '%"></span>' : "";
      return '<button class="move" data-action="' + m.action + '" data-kind="' + m.kind +
        '"' + (m.action === best ? ' data-best="true"' : "") + ">" +
        (i < 9 ? "<small>" + (i + 1) + ")</small> " : "") + DE.esc(m.label) + hint +
        "</button>";
    }).join("");
    $("moves").querySelectorAll("button.move").forEach(function (b) {
      b.onclick = function () { move(+b.getAttribute("data-action")); };
    });
    $("log").innerHTML = st.log.slice(-80).map(function (l) {
      return '<div data-step="' + l.step + '">' + DE.esc(l.text) + "</div>";
    }).join("");
    $("log").scrollTop = $("log").scrollHeight;
    var scores = st.view.seats.map(function (s) { return s.score; });
    $("play-results").innerHTML = DE.resultsTable(st.results, st.names, scores);
    var status = $("status");
    status.setAttribute("data-done", st.done);
    if (st.done || st.left) {
      status.innerHTML = (st.done ? "Match over. " : "You left the match. ") +
        'Saved as a replay: <span id="saved-path">' + DE.esc(st.saved || "-") + "</span>" +
        (st.replay_url ? ' (<a id="saved-link" href="' + DE.esc(st.replay_url) +
         '">watch it</a>)' : "");
    } else if (st.legal.length) {
      status.textContent = "Your move (" + st.names[st.seat] + ").";
    } else {
      status.textContent = "Waiting for the bots.";
    }
    $("leave").disabled = !!(st.done || st.left);
  }

  function move(action) {
    if (!current) return;
    post("/api/play/" + current.id + "/move", { action: action }).then(function (res) {
      if (!res.ok) { showError(res.data.error); return; }
      showError("");
      current = res.data;
      draw();
    });
  }

  form.onsubmit = function (e) {
    e.preventDefault();
    post("/api/play", settings()).then(function (res) {
      if (!res.ok) { showError(res.data.error); return; }
      showError("");
      current = res.data;
      draw();
    });
  };

  $("leave").onclick = function () {
    if (!current) return;
    post("/api/play/" + current.id + "/leave").then(function (res) {
      if (res.ok) { current = res.data; draw(); }
    });
  };

  /* Keys 1..9 choose a move; leaving the page saves the match. */
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || !current) return;
    var k = parseInt(e.key, 10);
    if (k >= 1 && k <= 9 && current.legal[k - 1]) {
      move(current.legal[k - 1].action);
      e.preventDefault();
    }
  });
  window.addEventListener("pagehide", function () {
    if (current && !current.done && !current.left && navigator.sendBeacon) {
      navigator.sendBeacon("/api/play/" + current.id + "/leave");
    }
  });
})();
