(function () {
  "use strict";
  // Everything from the data goes into the page as text (textContent), never as markup.
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var S = data.strings, cols = data.columns, cases = data.cases;
  var ROW_H = 32, OVERSCAN = 12;
  var KIND_RANK = {regression: 0, worse: 1, better: 2, changed: 3, added: 4, missing: 5, removed: 6, unchanged: 7, "": 8};
  var state = {statuses: {pass: 1, warn: 1, fail: 1, error: 1, user_fault: 1, captured: 1}, model: "", tag: "", q: "", selected: -1,
    sort: document.getElementById("sort").value};
  var viewport = document.getElementById("viewport"), spacer = document.getElementById("spacer");
  var rowsEl = document.getElementById("rows"), head = document.getElementById("list-head");
  var detail = document.getElementById("detail"), body = document.getElementById("detail-body");
  var permalink = document.getElementById("permalink"), count = document.getElementById("count");
  var order = [], shownCols = [], range = [-1, -1], template = "";

  function txt(v) { return typeof v === "number" ? S[v] : (v == null ? "" : String(v)); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  var hay = cases.map(function (c) {
    var parts = [c.n].concat(c.t);
    c.c.forEach(function (cell) { if (cell) parts.push(txt(cell[2])); });
    return parts.join("\n").toLowerCase();
  });

  function visibleCols() {
    return state.model === "" ? cols.map(function (_, i) { return i; }) : [Number(state.model)];
  }
  function lowest(c) {
    var m = Infinity;
    shownCols.forEach(function (i) { var cell = c.c[i]; if (cell && cell[1] < m) m = cell[1]; });
    return m === Infinity ? -1 : m;
  }
  // The score difference of the very pair the change label comes from (computed with it).
  function delta(c) { return typeof c.d === "number" ? c.d : 0; }
  var byName = {};
  cases.forEach(function (c, i) { byName[c.n] = i; });
  var hasTags = cases.some(function (c) { return c.t.length > 0; });

  function apply() {
    shownCols = visibleCols();
    var q = state.q.toLowerCase();
    order = [];
    for (var i = 0; i < cases.length; i++) {
      var c = cases[i];
      if (state.tag && c.t.indexOf(state.tag) < 0) continue;
      if (q && hay[i].indexOf(q) < 0) continue;
      var keep = false;
      for (var j = 0; j < shownCols.length; j++) {
        var cell = c.c[shownCols[j]];
        if (cell && state.statuses[cell[0]]) { keep = true; break; }
      }
      if (keep) order.push(i);
    }
    if (state.sort === "score-asc" || state.sort === "score-desc") {
      var sign = state.sort === "score-asc" ? 1 : -1, key = {};
      order.forEach(function (i) { key[i] = lowest(cases[i]); });
      order.sort(function (a, b) { return sign * (key[a] - key[b]) || a - b; });
    } else if (state.sort === "change") {
      order.sort(function (a, b) {
        var x = cases[a], y = cases[b];
        return (KIND_RANK[x.k || ""] - KIND_RANK[y.k || ""]) || (delta(x) - delta(y)) || a - b;
      });
    }
    template = "minmax(12rem,2fr)" + (hasTags ? " minmax(5rem,1fr)" : "") +
      " minmax(9rem,11rem)".repeat(shownCols.length) + (cols.length > 1 ? " 11rem" : "");
    head.textContent = "";
    head.style.gridTemplateColumns = template;
    function heading(text) { var h = el("span", null, text); h.title = text; head.appendChild(h); }
    heading("case");
    if (hasTags) heading("tags");
    shownCols.forEach(function (i) { heading(cols[i]); });
    if (cols.length > 1) heading(data.change || "change");
    count.textContent = order.length + " of " + cases.length + " cases";
    spacer.style.height = order.length * ROW_H + "px";
    viewport.style.height = Math.max(order.length, 1) * ROW_H + 2 + "px";
    viewport.scrollTop = 0;
    render(true);
  }

  function badge(cell) {
    var b = el("span", "badge " + cell[0], cell[0].toUpperCase() + (cell[3] ? " " + cell[3] : ""));
    return b;
  }

  function row(i) {
    var c = cases[i], r = el("div", "row item");
    r.setAttribute("role", "row");
    r.tabIndex = 0;
    r.dataset.index = String(i);
    if (i === state.selected) r.className += " selected";
    r.style.gridTemplateColumns = template;
    var name = el("span", "case", c.n);
    name.title = c.n;
    r.appendChild(name);
    if (hasTags) r.appendChild(el("span", "tags", c.t.join(", ")));
    shownCols.forEach(function (j) {
      var cell = c.c[j], s = el("span", "cell");
      if (cell) {
        s.title = cols[j] + ": " + txt(cell[2]);
        s.appendChild(badge(cell));
        s.appendChild(el("span", "score", cell[1].toFixed(3)));
      } else {
        s.textContent = "-";
      }
      r.appendChild(s);
    });
    if (cols.length > 1) {
      r.appendChild(el("span", "change " + (c.k || ""), changeText(c)));
    }
    return r;
  }

  function changeText(c) {
    // The label and the difference of the same pair: "worse -0.250", never "unchanged -0.667".
    var d = delta(c), shown = d.toFixed(3);
    if (!c.k) return "";
    return c.k + (Number(shown) !== 0 ? " " + (d > 0 ? "+" : "") + shown : "");
  }

  function render(force) {
    var top = viewport.scrollTop, h = viewport.clientHeight || 600;
    var first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    var end = Math.min(order.length, Math.ceil((top + h) / ROW_H) + OVERSCAN);
    if (!force && first === range[0] && end === range[1]) return;
    range = [first, end];
    var frag = document.createDocumentFragment();
    for (var k = first; k < end; k++) frag.appendChild(row(order[k]));
    rowsEl.textContent = "";
    rowsEl.style.transform = "translateY(" + first * ROW_H + "px)";
    rowsEl.appendChild(frag);
  }

  function pretty(args) {
    // Arguments indented when they are JSON; as the model wrote them otherwise.
    try { return JSON.stringify(JSON.parse(args), null, 1); } catch (e) { return args; }
  }

  function marked(parent, text, other) {
    // The part of `text` that differs from `other` (common start and end left plain).
    if (!other || text === other) { parent.textContent = text; return; }
    var n = Math.min(text.length, other.length), p = 0, s = 0;
    while (p < n && text[p] === other[p]) p++;
    while (s < n - p && text[text.length - 1 - s] === other[other.length - 1 - s]) s++;
    parent.appendChild(document.createTextNode(text.slice(0, p)));
    parent.appendChild(el("mark", null, text.slice(p, text.length - s)));
    parent.appendChild(document.createTextNode(text.slice(text.length - s)));
  }

  function rowsTable(rows) {
    var table = el("table", "rows"), tr = el("tr"), heads = ["field", "expected", "actual", "score", "weight", "why"];
    heads.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    table.appendChild(tr);
    rows.forEach(function (r) {
      var exp = txt(r[1]), act = txt(r[2]), line = el("tr", r[6] ? "ok" : "bad");
      line.appendChild(el("td", null, r[0]));
      var e = el("td"), a = el("td"), ec = el("code"), ac = el("code");
      if (r[6]) { ec.textContent = exp; ac.textContent = act; } else { marked(ec, exp, act); marked(ac, act, exp); }
      e.appendChild(ec); a.appendChild(ac);
      line.appendChild(e); line.appendChild(a);
      line.appendChild(el("td", "num", Number(r[3]).toFixed(2)));
      line.appendChild(el("td", "num", String(r[4])));
      line.appendChild(el("td", null, txt(r[5])));
      // Named cells: a narrow screen shows each row as a card, every value with its name.
      for (var k = 0; k < line.children.length; k++) line.children[k].dataset.label = heads[k];
      table.appendChild(line);
    });
    return table;
  }

  function conversation(tr) {
    var box = el("div", "conversation");
    box.appendChild(el("h4", null, "conversation"));
    var lastAssistant = "";
    (tr.m || []).forEach(function (m) {
      var role = m[0], msg = el("div", "msg " + role.split(" ")[0]);
      msg.appendChild(el("div", "role", role));
      var content = txt(m[1]);
      if (content) msg.appendChild(el("pre", null, content));
      if (role === "assistant") lastAssistant = content;
      m[2].forEach(function (call) {
        var c = el("div", "call");
        c.appendChild(el("span", "name", "→ " + call[0]));
        c.appendChild(el("pre", "args", pretty(txt(call[1]))));
        msg.appendChild(c);
      });
      box.appendChild(msg);
    });
    var fin = txt(tr.f);
    if (fin && fin !== lastAssistant) {
      var f = el("div", "msg final");
      f.appendChild(el("div", "role", "final answer"));
      f.appendChild(el("pre", null, fin));
      box.appendChild(f);
    }
    if (txt(tr.e)) box.appendChild(el("p", "err", "error: " + txt(tr.e)));
    return box;
  }

  function roleClass(role) {
    // The line's colour by who speaks: a simulated user apart from a scripted one.
    if (role.indexOf("simulated user") === 0) return "sim";
    if (role === "user said") return "user";
    if (role === "model called") return "called";
    if (role.indexOf("tool") === 0) return "tool";
    if (role === "model answered") return "answered";
    return "ended";
  }

  function turnsView(turns) {
    // A conversation turn by turn, a line per role: what the user said is never shown as an
    // expected value beside the model's answer.
    var box = el("div", "turns");
    box.appendChild(el("h4", null, "conversation, turn by turn"));
    turns.forEach(function (t) {
      var turn = el("div", "turn"), head = el("p", "turn-head");
      head.appendChild(el("b", null, "turn " + t[0] + " "));
      if (t[1]) {
        head.appendChild(el("span", "badge " + t[1], t[1].toUpperCase()));
        head.appendChild(el("span", "score", Number(t[2]).toFixed(3)));
      } else {
        head.appendChild(el("span", "muted", "not judged"));
      }
      turn.appendChild(head);
      t[4].forEach(function (line) {
        var said = el("div", "said " + roleClass(line[0]));
        said.appendChild(el("span", "role", line[0]));
        said.appendChild(el("pre", null, txt(line[1])));
        turn.appendChild(said);
      });
      if (t[1] && t[1] !== "pass" && txt(t[3])) turn.appendChild(el("p", "why", "why: " + txt(t[3])));
      box.appendChild(turn);
    });
    return box;
  }

  function trialView(tr, many) {
    var box = el("div", "trial");
    var head = el("p");
    if (many) {
      head.appendChild(el("b", null, "trial " + tr.i + " "));
      head.appendChild(el("span", "badge " + tr.s, tr.s.toUpperCase()));
      head.appendChild(el("span", "score", Number(tr.x).toFixed(3)));
      head.appendChild(document.createTextNode(" " + txt(tr.r)));
    }
    if (tr.tok != null) head.appendChild(el("span", "muted", (many ? " · " : "") + tr.tok + " tokens · " + tr.lat + " s"));
    if (tr.utok != null) head.appendChild(el("span", "muted", " · simulated user " + tr.utok + " tokens"));
    box.appendChild(head);
    if (tr.tu && tr.tu.length) box.appendChild(turnsView(tr.tu));
    if (tr.rows.length) box.appendChild(rowsTable(tr.rows));
    if (tr.m && tr.tu && tr.tu.length) {
      // The turns above say it by role; every message as the model saw it, on demand.
      var all = el("details", "messages");
      all.appendChild(el("summary", null, "every message as the model saw it"));
      all.appendChild(conversation(tr));
      box.appendChild(all);
    } else if (tr.m) {
      box.appendChild(conversation(tr));
    }
    return box;
  }

  function link(i, col) {
    // A URL fragment that opens case i (and only column `col` of it, when given).
    var p = new URLSearchParams();
    p.set("case", cases[i].n);
    if (col != null) p.set("model", cols[col]);
    return "#" + p.toString();
  }

  function show(i, only) {
    state.selected = i;
    var c = cases[i], which = only != null ? [only] : shownCols;
    body.textContent = "";
    detail.hidden = false;
    document.body.classList.add("detail-open");
    permalink.setAttribute("href", link(i, only));
    permalink.textContent = only != null ? "link to this case × model" : "link to this case";
    body.appendChild(el("h2", null, c.n));
    if (c.t.length) body.appendChild(el("p", "tags", "tags: " + c.t.join(", ")));
    if (only != null) {
      var all = el("a", "all", "show every model");
      all.setAttribute("href", link(i));
      body.appendChild(all);
    }
    var sides = el("div", "sides");
    which.forEach(function (j) {
      var cell = c.c[j], side = el("section", "side");
      var h = el("h3", null, cols[j] + " ");
      var a = el("a", "permalink", "#");
      a.setAttribute("href", link(i, j));
      a.title = "a link that opens " + cols[j] + " on this case";
      h.appendChild(a);
      side.appendChild(h);
      if (!cell) {
        side.appendChild(el("p", "muted", "not run"));
      } else {
        var p = el("p");
        p.appendChild(badge(cell));
        p.appendChild(el("span", "score", cell[1].toFixed(3)));
        side.appendChild(p);
        side.appendChild(el("p", "reason", txt(cell[2])));
        cell[4].forEach(function (tr) { side.appendChild(trialView(tr, cell[4].length > 1)); });
      }
      sides.appendChild(side);
    });
    body.appendChild(sides);
    detail.scrollTop = 0;
    reveal(i);
    render(true);
  }

  function reveal(i) {
    // Scroll the list so the open case's row is in view (when the filters show it).
    var k = order.indexOf(i);
    if (k < 0) return;
    var top = k * ROW_H, h = viewport.clientHeight;
    if (top < viewport.scrollTop || top + ROW_H > viewport.scrollTop + h) {
      viewport.scrollTop = Math.max(0, top - Math.floor(h / 3));
    }
  }

  function hide() {
    state.selected = -1;
    detail.hidden = true;
    document.body.classList.remove("detail-open");
    render(true);
  }

  function route() {
    // Open what the URL fragment names: #case=<name>[&model=<column>]; close on anything else.
    var p = new URLSearchParams(location.hash.slice(1)), name = p.get("case");
    if (name === null || !(name in byName)) { if (!detail.hidden) hide(); return; }
    var col = p.has("model") ? cols.indexOf(p.get("model")) : -1;
    show(byName[name], col >= 0 ? col : null);
  }

  function open(i) {
    var target = link(i);
    if (location.hash === target) show(i); else location.hash = target;
    detail.focus({preventScroll: true});
  }

  function step(by) {
    // The next or previous case in the list as filtered and sorted.
    if (!order.length) return;
    var k = order.indexOf(state.selected);
    k = k < 0 ? 0 : Math.min(order.length - 1, Math.max(0, k + by));
    open(order[k]);
  }

  function pick(ev) {
    var r = ev.target.closest(".row.item");
    if (r) open(Number(r.dataset.index));
  }
  rowsEl.addEventListener("click", pick);
  rowsEl.addEventListener("keydown", function (ev) { if (ev.key === "Enter") pick(ev); });
  var pending = false;
  viewport.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; render(false); });
  });
  document.querySelectorAll("#status-filter input").forEach(function (box) {
    box.addEventListener("change", function () {
      state.statuses[box.value] = box.checked ? 1 : 0;
      apply();
    });
  });
  document.getElementById("model-filter").addEventListener("change", function (ev) { state.model = ev.target.value; apply(); });
  document.getElementById("tag-filter").addEventListener("change", function (ev) { state.tag = ev.target.value; apply(); });
  document.getElementById("sort").addEventListener("change", function (ev) { state.sort = ev.target.value; apply(); });
  var timer = 0;
  document.getElementById("search").addEventListener("input", function (ev) {
    clearTimeout(timer);
    timer = setTimeout(function () { state.q = ev.target.value; apply(); }, 120);
  });
  document.getElementById("close").addEventListener("click", function () { location.hash = ""; });
  document.getElementById("prev").addEventListener("click", function () { step(-1); });
  document.getElementById("next").addEventListener("click", function () { step(1); });
  document.addEventListener("keydown", function (ev) {
    if (detail.hidden || ev.target.closest("input, select, textarea")) return;
    if (ev.key === "Escape") location.hash = "";
    else if (ev.key === "j") step(1);
    else if (ev.key === "k") step(-1);
  });
  window.addEventListener("hashchange", route);
  apply();
  route();
  // Opened from a link: bring the list (with the case's row marked) into view beside it.
  if (!detail.hidden) document.getElementById("controls").scrollIntoView();
  document.body.dataset.ready = "1";
})();
