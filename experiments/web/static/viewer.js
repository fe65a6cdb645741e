/* Dragon's Egg table drawing and the replay viewer (no dependencies, no network).
   DE.renderView draws one view (dragons_egg.experiments.web.frames); DE.startReplay steps
   through a replay's frames. Every drawn element carries data-* attributes with what it shows,
   which the browser tests read. */
(function () {
  "use strict";
  var DE = (window.DE = window.DE || {});
  var SUITS = { E: "Earth", W: "Water", F: "Fire", L: "Lightning" };
  var DRAGONS = { BEAST: "Beast", DARKLORD: "Darklord", HORSEMAN: "Horseman",
                  EXECUTIONER: "Executioner" };

  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  DE.esc = esc;

  /* One card as render_image draws it: numbered cards in their suit's colour with the number
     big and the suit below, dragon cards dark with a gold flame, the Egg pale with a shell. */
  var SHORT = { Lightning: "Light.", Darklord: "Dark.", Horseman: "Horse.",
                Executioner: "Exec." };
  function label(name, small) { return small && SHORT[name] ? SHORT[name] : name; }

  DE.card = function (code, small) {
    if (code === "EGG") {
      return '<span class="card egg" data-card="EGG" title="the Egg">' +
        '<svg width="18" height="22" viewBox="0 0 18 22"><ellipse cx="9" cy="11" rx="7.5" ' +
        'ry="10" fill="var(--egg-shell)" stroke="var(--egg-stroke)" stroke-width="2"/></svg>' +
        "<i>Egg</i></span>";
    }
    if (DRAGONS[code]) {
      return '<span class="card dragon" data-card="' + code + '" title="' + DRAGONS[code] +
        ' (dragon card)"><svg width="18" height="24" viewBox="0 0 18 24">' +
        '<polygon points="9,1 16,12 9,22 2,12" fill="var(--dragon-ink)"/>' +
        '<polygon points="9,10 11.6,14.5 9,19 6.4,14.5" fill="var(--dragon-fill)"/></svg>' +
        "<i>" + label(DRAGONS[code], small) + "</i></span>";
    }
    var suit = code.slice(-1), number = code.slice(0, -1);
    return '<span class="card suit-' + suit + '" data-card="' + code + '" title="' + number +
      " of " + SUITS[suit] + '"><b>' + number + "</b><i>" + label(SUITS[suit], small) +
      "</i></span>";
  };

  DE.cards = function (codes, small) {
    return '<div class="cards' + (small ? " small" : "") + '">' +
      codes.map(function (c) { return DE.card(c, small); }).join("") + "</div>";
  };

  function backs(count) {
    var out = "";
    for (var i = 0; i < Math.min(count, 6); i++) out += '<span class="card back"></span>';
    return '<div class="cards small">' + out + (count > 6 ? " +" + (count - 6) : "") + "</div>";
  }

  function signed(x) {
    var r = Math.round(x * 100) / 100;
    return (r > 0 ? "+" : "") + r.toFixed(2);
  }
  DE.signed = signed;

  function seatName(names, q) { return q >= 0 ? names[q] : "?"; }

  /* The banner: round, phase, whose turn, the Egg holder and the tribute, always at once. */
  function banner(view, names) {
    var chips = ['<span class="chip" data-role="round">Round ' + view.round + "/" +
      view.rounds + " · " + view.phase + "</span>"];
    if (view.to_act >= 0) {
      chips.push('<span class="chip turn-chip" data-role="to-act">To act: ' +
        esc(seatName(names, view.to_act)) + "</span>");
    } else if (view.phase === "done") {
      chips.push('<span class="chip turn-chip" data-role="to-act">Match over</span>');
    }
    chips.push('<span class="chip egg-chip" data-role="egg" data-egg-holder="' +
      view.egg_holder + '">Egg: ' + (view.egg_holder >= 0 ? esc(names[view.egg_holder])
        : (view.phase === "done" ? "-" : "not known to this seat")) + "</span>");
    if (view.dragon >= 0) {
      var t = view.tribute, what = "";
      if (t) {
        what = ": asked " + (t.asked.join(" ") || "-") + ", took " + (t.taken.join(" ") || "-") +
          ", gave back " + (t.given.join(" ") || "-");
      } else {
        what = " (the exchange is private to the two)";
      }
      chips.push('<span class="chip tribute-chip" data-role="tribute">Tribute: ' +
        esc(names[view.dragon]) + " (Dragon) \u2190 " + esc(names[view.payer]) + what +
        "</span>");
    } else {
      chips.push('<span class="chip tribute-chip" data-role="tribute">No tribute in round 1' +
        "</span>");
    }
    return '<div class="banner">' + chips.join("") + "</div>";
  }

  function seatBox(seat, view) {
    var tags = [];
    if (seat.dragon) tags.push('<span class="pill dragon">Dragon</span>');
    if (seat.payer) tags.push('<span class="pill payer">pays tribute</span>');
    if (seat.egg) tags.push('<span class="pill egg">holds the Egg</span>');
    if (seat.out >= 0) tags.push('<span class="pill out">out #' + (seat.out + 1) + "</span>");
    if (seat.passed) tags.push('<span class="pill passed">passed</span>');
    if (seat.locked) tags.push('<span class="pill locked">locked out</span>');
    if (seat.seat === view.to_act) tags.push('<span class="pill acting">to act</span>');
    var hand = seat.hand === null ? backs(seat.hand_size) : DE.cards(seat.hand, true);
    return '<div class="seat' + (seat.seat === view.to_act ? " acting" : "") +
      '" data-seat="' + seat.seat + '" data-hand="' + (seat.hand === null ? "hidden"
        : seat.hand.join(" ")) + '" data-hand-size="' + seat.hand_size + '" data-score="' +
      seat.score + '" data-egg="' + seat.egg + '" data-passed="' + seat.passed +
      '" data-locked="' + seat.locked + '" data-out="' + seat.out + '">' +
      '<div class="who"><span>' + esc(seat.name) + '</span><span class="score">' +
      signed(seat.score) + "</span></div>" + '<div class="tags">' + tags.join("") + "</div>" +
      '<div class="muted" style="font-size:12px">' + seat.hand_size + " card" +
      (seat.hand_size === 1 ? "" : "s") + "</div>" + hand + "</div>";
  }

  function pile(view, names) {
    var body;
    if (view.plays && view.plays.length) {
      body = view.plays.map(function (p) {
        return '<span class="play"><small>' + esc(names[p[0]]) + "</small>" +
          DE.cards(p[1]) + "</span>";
      }).join("");
    } else if (view.pile.length) {
      body = DE.cards(view.pile) + '<small>top play: ' + view.top[1] + " \u00d7 " +
        view.top[0] + (view.last_player >= 0 ? ", by " + esc(names[view.last_player]) : "") +
        "</small>";
    } else {
      body = '<span class="muted" style="color:var(--felt-ink)">(empty)</span>';
    }
    return '<div class="pile" id="pile" data-cards="' + view.pile.join(" ") +
      '"><div class="label">Pile</div>' + body + "</div>";
  }

  DE.resultsTable = function (results, names, scores) {
    if (!results || !results.length) return "";
    var head = "<tr><th>round</th><th>finishing order (Dragon first, Egg last)</th>" +
      names.map(function (n) { return '<th class="num">' + esc(n) + "</th>"; }).join("") +
      "</tr>";
    var rows = results.map(function (r) {
      return '<tr data-round="' + r.round + '"><td>' + r.round + "</td><td>" +
        r.order.map(function (q) { return esc(names[q]); }).join(" &gt; ") +
        (r.deadlock ? " (deadlock)" : "") + "</td>" +
        r.rewards.map(function (x) { return '<td class="num">' + signed(x) + "</td>"; })
          .join("") + "</tr>";
    }).join("");
    var total = scores ? '<tr><th colspan="2">match score</th>' + scores.map(function (x) {
      return '<th class="num">' + signed(x) + "</th>";
    }).join("") + "</tr>" : "";
    return '<table class="list results" id="results">' + head + rows + total + "</table>";
  };

  /* Draw one view into el. opts: names, next (a line or null), results. */
  DE.renderView = function (el, view, opts) {
    var names = opts.names;
    el.setAttribute("data-round", view.round);
    el.setAttribute("data-phase", view.phase);
    el.setAttribute("data-to-act", view.to_act);
    el.setAttribute("data-view", view.viewer === null ? "all" : view.viewer);
    el.setAttribute("data-egg-holder", view.egg_holder);
    var html = banner(view, names) + '<div class="felt"><div class="seats">' +
      view.seats.map(function (s) { return seatBox(s, view); }).join("") + "</div>" +
      pile(view, names) + "</div>";
    html += '<div class="panel"><b>Played this round:</b> ' +
      (view.played.length ? DE.cards(view.played, true) : "-") + "</div>";
    if (opts.next !== undefined && opts.next !== null) {
      html += '<div class="next" id="next">next: ' + esc(opts.next) + "</div>";
    }
    el.innerHTML = html;
  };

  /* The replay viewer: step, play at a speed, jump to a round or the tribute, choose the
     view; arrows step, space plays, Home/End jump. */
  DE.startReplay = function (root, data) {
    var meta = data.meta, frames = data.frames, names = meta.names;
    var k = 0, viewer = "all", timer = null;
    var opts = '<option value="all">all hands</option>' + names.map(function (n, q) {
      return '<option value="' + q + '">' + esc(n) + "'s view</option>";
    }).join("");
    var rounds = meta.round_starts.map(function (s, r) {
      return '<option value="' + s + '">round ' + (r + 1) + "</option>";
    }).join("");
    root.innerHTML =
      '<div class="controls">' +
      '<button id="first" title="first step (Home)">|\u25c0</button>' +
      '<button id="prev" title="step back (\u2190)">\u25c0</button>' +
      '<button id="play" title="play / pause (space)">\u25b6 play</button>' +
      '<button id="next-step" title="step forward (\u2192)">\u25b6</button>' +
      '<button id="last" title="last step (End)">\u25b6|</button>' +
      '<input type="range" id="slider" min="0" max="' + (frames.length - 1) + '" value="0">' +
      '<span class="steplabel" id="steplabel"></span></div>' +
      '<div class="controls"><label>speed <select id="speed">' +
      '<option value="1000">1 step/s</option><option value="500" selected>2 steps/s</option>' +
      '<option value="200">5 steps/s</option><option value="60">fast</option></select></label>' +
      '<label>jump to <select id="round">' + rounds + "</select></label>" +
      '<button id="tribute"' + (meta.tribute_starts.length ? "" : " disabled") +
      '>tribute \u21b7</button>' +
      '<label>view <select id="seat-view">' + opts + "</select></label></div>" +
      '<div id="table"></div><div id="results-box"></div>' +
      '<p class="muted" id="check">' + esc(meta.check) + "</p>";
    var table = root.querySelector("#table");
    function $(id) { return root.querySelector("#" + id); }

    function show() {
      var f = frames[k];
      var view = viewer === "all" ? f.all : f.seats[+viewer];
      var next = f.next ? (viewer === "all" ? f.next.all : f.next.seats[+viewer]) : null;
      if (!f.next) {
        next = meta.illegal_move ? "the match ended by an illegal move of " +
          meta.illegal_move[0] : (meta.finished ? "the match is over" :
          "the replay ends here (saved before the end)");
      }
      DE.renderView(table, view, { names: names, next: next });
      table.setAttribute("data-step", f.step);
      var scores = f.all.seats.map(function (s) { return s.score; });
      $("results-box").innerHTML = DE.resultsTable(f.results, names, scores);
      $("slider").value = k;
      $("steplabel").textContent = "step " + f.step + "/" + meta.moves;
      $("round").value = String(meta.round_starts[f.round - 1]);
    }
    function go(to) { k = Math.max(0, Math.min(frames.length - 1, to)); show(); }
    function stop() {
      if (timer) { clearInterval(timer); timer = null; }
      $("play").textContent = "\u25b6 play";
    }
    function toggle() {
      if (timer) { stop(); return; }
      if (k >= frames.length - 1) go(0);
      $("play").textContent = "\u2016 pause";
      timer = setInterval(function () {
        if (k >= frames.length - 1) { stop(); return; }
        go(k + 1);
      }, +$("speed").value);
    }
    $("first").onclick = function () { stop(); go(0); };
    $("prev").onclick = function () { stop(); go(k - 1); };
    $("next-step").onclick = function () { stop(); go(k + 1); };
    $("last").onclick = function () { stop(); go(frames.length - 1); };
    $("play").onclick = toggle;
    $("speed").onchange = function () { if (timer) { stop(); toggle(); } };
    $("slider").oninput = function () { stop(); go(+this.value); };
    $("round").onchange = function () { stop(); go(+this.value); };
    $("seat-view").onchange = function () { viewer = this.value; show(); };
    $("tribute").onclick = function () {
      stop();
      var after = meta.tribute_starts.filter(function (s) { return s > k; });
      go(after.length ? after[0] : meta.tribute_starts[0]);
    };
    document.addEventListener("keydown", function (e) {
      var tag = (e.target && e.target.tagName) || "";
      if (tag === "INPUT" && e.target.type !== "range" || tag === "TEXTAREA") return;
      if (e.key === "ArrowRight") { stop(); go(k + 1); e.preventDefault(); }
      else if (e.key === "ArrowLeft") { stop(); go(k - 1); e.preventDefault(); }
      else if (e.key === " " || e.key === "Spacebar") { toggle(); e.preventDefault(); }
      else if (e.key === "Home") { stop(); go(0); e.preventDefault(); }
      else if (e.key === "End") { stop(); go(frames.length - 1); e.preventDefault(); }
    });
    show();
    return { go: go, frames: frames };
  };
})();
