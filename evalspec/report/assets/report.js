(function () {
  "use strict";
  // Everything from the data goes into the page as text (textContent), never as markup.
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var S = data.strings, cols = data.columns, cases = data.cases;
  var ROW_H = 32, OVERSCAN = 12;
  var KIND_RANK = {regression: 0, worse: 1, better: 2, changed: 3, added: 4, missing: 5, removed: 6, unchanged: 7, "": 8};
  var state = {statuses: {pass: 1, warn: 1, fail: 1, error: 1}, model: "", tag: "", q: "", selected: -1,
    sort: document.getElementById("sort").value};
  var viewport = document.getElementById("viewport"), spacer = document.getElementById("spacer");
  var rowsEl = document.getElementById("rows"), head = document.getElementById("list-head");
  var detail = document.getElementById("detail"), count = document.getElementById("count");
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
  function delta(c) {
    // The largest drop (or smallest gain) of any column against the first.
    var a = c.c[0], d = null;
    if (!a) return 0;
    for (var j = 1; j < c.c.length; j++) {
      var b = c.c[j];
      if (b && (d === null || b[1] - a[1] < d)) d = b[1] - a[1];
    }
    return d || 0;
  }
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
        return (KIND_RANK[x.k] - KIND_RANK[y.k]) || (delta(x) - delta(y)) || a - b;
      });
    }
    template = "minmax(12rem,2fr)" + (hasTags ? " minmax(5rem,1fr)" : "") +
      " minmax(9rem,11rem)".repeat(shownCols.length) + (cols.length > 1 ? " 11rem" : "");
    head.textContent = "";
    head.style.gridTemplateColumns = template;
    head.appendChild(el("span", null, "case"));
    if (hasTags) head.appendChild(el("span", null, "tags"));
    shownCols.forEach(function (i) { head.appendChild(el("span", null, cols[i])); });
    if (cols.length > 1) head.appendChild(el("span", null, "change"));
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
        s.appendChild(badge(cell));
        s.appendChild(el("span", "score", cell[1].toFixed(3)));
      } else {
        s.textContent = "-";
      }
      r.appendChild(s);
    });
    if (cols.length > 1) {
      var d = delta(c);
      r.appendChild(el("span", "change " + c.k, c.k + (d ? " " + (d > 0 ? "+" : "") + d.toFixed(3) : "")));
    }
    return r;
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
    var table = el("table", "rows"), tr = el("tr");
    ["field", "expected", "actual", "score", "weight", "why"].forEach(function (h) { tr.appendChild(el("th", null, h)); });
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
    box.appendChild(head);
    if (tr.rows.length) box.appendChild(rowsTable(tr.rows));
    if (tr.m) box.appendChild(conversation(tr));
    return box;
  }

  function show(i) {
    state.selected = i;
    var c = cases[i];
    detail.textContent = "";
    detail.hidden = false;
    detail.appendChild(el("h2", null, c.n));
    if (c.t.length) detail.appendChild(el("p", "tags", "tags: " + c.t.join(", ")));
    var sides = el("div", "sides");
    shownCols.forEach(function (j) {
      var cell = c.c[j], side = el("div", "side");
      side.appendChild(el("h3", null, cols[j]));
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
    detail.appendChild(sides);
    render(true);
  }

  function pick(ev) {
    var r = ev.target.closest(".row.item");
    if (r) show(Number(r.dataset.index));
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
  apply();
  document.body.dataset.ready = "1";
})();
