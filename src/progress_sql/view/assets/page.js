// progress-sql run explorer: draws the run embedded in #run-data (no network, no framework).
"use strict";
(function () {
  var DATA_VERSION = 1;
  var ROW = 28;          // px, the table's fixed row height (virtual scrolling)
  var BUFFER = 12;       // rows drawn above and below the visible ones
  performance.mark("view:start");  // bench/view.py reads these marks
  var data = JSON.parse(document.getElementById("run-data").textContent);
  performance.mark("view:parsed");
  // The table column by column; each example's view sits in its own JSON block, parsed when opened.
  var rows = data.rows, N = rows.count, col = rows.values, chunks = {};
  var shown = [];        // indices of the examples that pass the filters, in order
  var selected = -1;     // position in shown
  var filters = {};      // facet key -> value ("" = any) or {min, max}
  var search = "";

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "cls") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c != null) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return node;
  }
  function fmt(value) {
    if (value === null || value === undefined) return "n/a";
    if (Array.isArray(value)) return value.join(", ");
    if (typeof value === "number") return Number.isInteger(value) ? String(value) : String(+value.toPrecision(4));
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }
  function pct(value) { return value === null || value === undefined ? "n/a" : (100 * value).toFixed(2) + "%"; }
  function verdictClass(v) { return v === "match" ? "v-match" : (v ? "v-bad" : ""); }

  // ---- header -----------------------------------------------------------------------------------
  function drawHeader() {
    var header = document.getElementById("header");
    header.appendChild(el("h1", {text: data.title}));
    data.runs.forEach(function (run, i) {
      var name = data.runs.length > 1 ? "run " + "AB"[i] + ": " : "run: ";
      header.appendChild(el("p", {cls: "run"}, [name, el("code", {text: run.path}), " (" + run.command + ")"]));
      if (run.profile) header.appendChild(el("p", {cls: "profile", "data-profile": run.profile}, ["profile: ", el("code", {text: run.profile})]));
      var settings = el("details", {}, [el("summary", {text: "settings and versions" + (data.runs.length > 1 ? " of " + "AB"[i] : "")}), kvTable(run.settings), kvTable(run.versions)]);
      header.appendChild(settings);
    });
    var list = el("ul", {cls: "metrics", "aria-label": "headline metrics"});
    data.metrics.forEach(function (m) {
      var value = m.percent ? pct(m.value) : fmt(m.value);
      var extra = [];
      if (m.se !== null && m.se !== undefined) extra.push("SE " + (m.percent ? (100 * m.se).toFixed(2) : fmt(m.se)));
      if (m.n !== null && m.n !== undefined) extra.push("n = " + m.n);
      list.appendChild(el("li", {cls: "metric", "data-metric": m.label, "data-value": m.value === null ? "" : String(m.value)},
        [el("span", {cls: "label", text: m.label}), el("span", {cls: "value", text: value}), " ", el("span", {cls: "n", text: extra.join(", ")})]));
    });
    header.appendChild(list);
    data.tables.forEach(function (t) { header.appendChild(el("details", {}, [el("summary", {text: t.title}), rowsTable(t.rows)])); });
    if (data.notes.length) {
      header.appendChild(el("ul", {cls: "notes", "aria-label": "notes"}, data.notes.map(function (n) { return el("li", {text: "note: " + n}); })));
    }
  }
  function kvTable(mapping) {
    var table = el("table", {cls: "kv"});
    Object.keys(mapping || {}).forEach(function (k) { table.appendChild(el("tr", {}, [el("th", {text: k}), el("td", {cls: "mono", text: fmt(mapping[k])})])); });
    return table;
  }
  function rowsTable(rows) {
    var table = el("table", {cls: "data"});
    if (!rows.length) return table;
    var keys = Object.keys(rows[0]);
    table.appendChild(el("tr", {}, keys.map(function (k) { return el("th", {text: k}); })));
    rows.forEach(function (r) { table.appendChild(el("tr", {}, keys.map(function (k) { return el("td", {text: fmt(r[k])}); }))); });
    return table;
  }

  // ---- filters ----------------------------------------------------------------------------------
  var SHARED_TEXT = {feedback: true};  // page.py's SHARED_TEXT: fields written once in data.texts, by number
  function withTexts(value) {
    if (Array.isArray(value)) return value.map(withTexts);
    if (value === null || typeof value !== "object") return value;
    var out = {};
    for (var k in value) out[k] = SHARED_TEXT[k] && typeof value[k] === "number" ? data.texts[value[k]] : withTexts(value[k]);
    return out;
  }
  function readChunk(k) {
    // page.py's pack(): the JSON of a block of example views, gzip, base64; decompressed once, when first opened
    var binary = atob(document.getElementById("details-" + k).textContent.trim());
    var bytes = new Uint8Array(binary.length);
    for (var j = 0; j < binary.length; j++) bytes[j] = binary.charCodeAt(j);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }
  function detailOf(i) {  // a promise of the i-th example's view
    var k = Math.floor(i / rows.chunk);
    if (!chunks[k]) chunks[k] = readChunk(k);
    return chunks[k].then(function (block) { return withTexts(block[i - k * rows.chunk]); });
  }
  var haystack = null;  // the lower-case search text of each example, built on the first search
  function searchText(i) {
    if (!haystack) {
      haystack = new Array(N);
      for (var j = 0; j < N; j++) {
        var parts = [rows.text[j]];
        data.searched.forEach(function (key) { var v = col[key] && col[key][j]; if (v !== null && v !== undefined) parts.push(String(v).toLowerCase()); });
        haystack[j] = parts.join(" ");
      }
    }
    return haystack[i];
  }
  function facetValues(key) {
    var counts = {}, values = col[key];
    for (var i = 0; i < N; i++) {
      var v = values[i];
      (Array.isArray(v) ? v : [v]).forEach(function (x) { var s = x === null || x === undefined ? "n/a" : String(x); counts[s] = (counts[s] || 0) + 1; });
    }
    return Object.keys(counts).sort().map(function (k) { return [k, counts[k]]; });
  }
  function drawFilters() {
    var form = document.getElementById("filters");
    var box = el("input", {type: "search", id: "search", placeholder: "question or SQL", "aria-label": "search question and SQL"});
    box.addEventListener("input", function () { search = box.value.trim().toLowerCase(); apply(); });
    form.appendChild(el("label", {cls: "search"}, ["search (/)", box]));
    data.facets.forEach(function (f) {
      if (f.kind === "range") {
        var lo = el("input", {type: "number", step: "any", cls: "num", "data-facet": f.key, "data-bound": "min", "aria-label": f.label + " minimum"});
        var hi = el("input", {type: "number", step: "any", cls: "num", "data-facet": f.key, "data-bound": "max", "aria-label": f.label + " maximum"});
        var update = function () { filters[f.key] = {min: lo.value === "" ? null : +lo.value, max: hi.value === "" ? null : +hi.value}; apply(); };
        lo.addEventListener("input", update); hi.addEventListener("input", update);
        form.appendChild(el("label", {}, [f.label + " from / to", el("span", {}, [lo, " ", hi])]));
        return;
      }
      var values = facetValues(f.key);
      var select = el("select", {"data-facet": f.key, "aria-label": f.label}, [el("option", {value: "", text: "any (" + N + ")"})]);
      values.forEach(function (pair) { select.appendChild(el("option", {value: pair[0], text: pair[0] + " (" + pair[1] + ")"})); });
      select.addEventListener("change", function () { filters[f.key] = select.value; apply(); });
      form.appendChild(el("label", {}, [f.label, select]));
    });
  }
  function passes(i) {
    for (var key in filters) {
      var want = filters[key], v = col[key][i];
      if (want === "" || want === undefined) continue;
      if (typeof want === "object") {
        if (want.min === null && want.max === null) continue;
        if (typeof v !== "number") return false;
        if (want.min !== null && v < want.min) return false;
        if (want.max !== null && v > want.max) return false;
        continue;
      }
      var list = Array.isArray(v) ? v : [v];
      var hit = false;
      for (var j = 0; j < list.length; j++) { var s = list[j] === null || list[j] === undefined ? "n/a" : String(list[j]); if (s === want) { hit = true; break; } }
      if (!hit) return false;
    }
    return !search || searchText(i).indexOf(search) >= 0;
  }
  function apply() {
    var keep = selected >= 0 ? shown[selected] : -1;
    shown = [];
    for (var i = 0; i < N; i++) if (passes(i)) shown.push(i);
    selected = shown.indexOf(keep);
    document.getElementById("count").textContent = shown.length + " of " + N + " " + data.item_label + " shown";
    var table = document.getElementById("table");
    table.scrollTop = 0;
    sizeTable();
    drawRows(true);
  }

  // ---- table (virtual scrolling) ------------------------------------------------------------------
  var spacer, headRow, drawn = {};
  function drawTable() {
    var table = document.getElementById("table");
    var cols = data.columns.map(function (c) { return c.key === "index" ? "56px" : (c.wide ? "minmax(140px, 3fr)" : "minmax(84px, 1fr)"); }).join(" ");
    table.style.setProperty("--cols", cols);
    headRow = el("div", {cls: "thead", role: "row"}, data.columns.map(function (c) { return el("div", {cls: "cell", role: "columnheader", text: c.label}); }));
    spacer = el("div", {cls: "spacer", "aria-hidden": "true"});
    table.appendChild(headRow);
    table.appendChild(spacer);
    table.addEventListener("scroll", function () { drawRows(false); });
    table.addEventListener("click", function (event) {
      var row = event.target.closest(".trow");
      if (row) select(+row.getAttribute("data-pos"));
    });
    table.addEventListener("keydown", onKey);
    window.addEventListener("resize", function () { drawRows(true); });
  }
  function sizeTable() { spacer.style.height = (shown.length * ROW) + "px"; }
  function rowNode(pos) {
    var i = shown[pos];
    var node = el("div", {cls: "trow" + (pos === selected ? " selected" : ""), role: "row", "data-pos": String(pos), "data-id": rows.ids[i], "aria-selected": pos === selected ? "true" : "false"},
      data.columns.map(function (c) {
        var v = col[c.key][i];
        var cell = el("div", {cls: "cell" + (/verdict/.test(c.key) ? " " + verdictClass(v) : ""), role: "gridcell", title: fmt(v), text: fmt(v)});
        return cell;
      }));
    node.style.top = (ROW + pos * ROW) + "px";
    return node;
  }
  function drawRows(all) {
    var table = document.getElementById("table");
    var first = Math.max(0, Math.floor(table.scrollTop / ROW) - BUFFER);
    var last = Math.min(shown.length, Math.ceil((table.scrollTop + table.clientHeight) / ROW) + BUFFER);
    if (all) { Object.keys(drawn).forEach(function (k) { drawn[k].remove(); }); drawn = {}; }
    Object.keys(drawn).forEach(function (k) { if (k < first || k >= last) { drawn[k].remove(); delete drawn[k]; } });
    for (var pos = first; pos < last; pos++) if (!drawn[pos]) { drawn[pos] = rowNode(pos); table.appendChild(drawn[pos]); }
  }
  function select(pos) {
    if (pos < 0 || pos >= shown.length) return;
    selected = pos;
    var table = document.getElementById("table");
    var top = ROW + pos * ROW;
    if (top < table.scrollTop + ROW) table.scrollTop = top - ROW;
    else if (top + ROW > table.scrollTop + table.clientHeight) table.scrollTop = top + ROW - table.clientHeight;
    drawRows(true);
    var i = shown[pos], box = document.getElementById("detail");
    box.setAttribute("aria-busy", "true");
    box.setAttribute("data-opening", rows.ids[i]);
    detailOf(i).then(function (detail) {
      if (box.getAttribute("data-opening") !== rows.ids[i]) return;  // another example was chosen meanwhile
      drawDetail({id: rows.ids[i], detail: detail});
      box.removeAttribute("aria-busy");
    }).catch(function (error) { box.textContent = "cannot read this example's view: " + error; });
  }
  function onKey(event) {
    if (event.target.tagName === "INPUT" || event.target.tagName === "SELECT") return;
    var k = event.key;
    if (k === "j" || k === "ArrowDown") { select(Math.min(shown.length - 1, selected + 1)); event.preventDefault(); }
    else if (k === "k" || k === "ArrowUp") { select(Math.max(0, selected - 1)); event.preventDefault(); }
    else if (k === "Home") { select(0); event.preventDefault(); }
    else if (k === "End") { select(shown.length - 1); event.preventDefault(); }
    else if (k === "Enter" && selected < 0) { select(0); event.preventDefault(); }
  }
  document.addEventListener("keydown", function (event) {
    if (event.target.tagName === "INPUT" || event.target.tagName === "SELECT") {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (event.key === "/") { document.getElementById("search").focus(); event.preventDefault(); }
    else if (event.target === document.body || event.target.closest("#detail")) onKey(event);
  });

  // ---- SQL diff by clause -------------------------------------------------------------------------
  var CLAUSES = ["SELECT", "FROM", "JOIN", "ON", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "UNION", "INTERSECT", "EXCEPT"];
  function tokens(sql) {
    return (sql || "").match(/'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|[A-Za-z_][A-Za-z0-9_.]*|\d+(?:\.\d+)?|<=|>=|<>|!=|\|\||\S/g) || [];
  }
  var JOIN_MODIFIER = /^(LEFT|RIGHT|INNER|OUTER|CROSS|FULL|NATURAL)$/;
  function clauses(sql) {
    // Top-level clauses (a subquery stays inside the clause that holds it); "LEFT JOIN ..." is one JOIN clause.
    var toks = tokens(sql), out = [], depth = 0, current = null, joinOpened = false;
    for (var i = 0; i < toks.length; i++) {
      var t = toks[i], up = t.toUpperCase(), label = null;
      if (depth === 0) {
        var two = i + 1 < toks.length ? up + " " + toks[i + 1].toUpperCase() : "";
        if (two === "GROUP BY" || two === "ORDER BY") label = two;
        else if (up === "JOIN") { if (joinOpened) joinOpened = false; else label = "JOIN"; }
        else if (JOIN_MODIFIER.test(up)) {
          var j = i; while (j < toks.length && JOIN_MODIFIER.test(toks[j].toUpperCase())) j++;
          if (!joinOpened && j < toks.length && toks[j].toUpperCase() === "JOIN") { label = "JOIN"; joinOpened = true; }
        } else if (CLAUSES.indexOf(up) >= 0 && up !== "ON" && up !== "JOIN") label = up;
      }
      if (label) { current = {label: label, toks: []}; out.push(current); }
      else if (!current) { current = {label: "", toks: []}; out.push(current); }
      current.toks.push(t);
      if (t === "(") depth++; else if (t === ")") depth = Math.max(0, depth - 1);
    }
    return out;
  }
  function norm(tok) { return /^['"`]/.test(tok) ? tok : tok.toLowerCase(); }
  function lcs(a, b, eq) {
    var n = a.length, m = b.length, dp = [];
    for (var i = 0; i <= n; i++) { dp.push(new Array(m + 1).fill(0)); }
    for (i = n - 1; i >= 0; i--) for (var j = m - 1; j >= 0; j--) dp[i][j] = eq(a[i], b[j]) ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    var ops = []; i = 0; j = 0;
    while (i < n && j < m) {
      if (eq(a[i], b[j])) { ops.push(["=", a[i], b[j]]); i++; j++; }
      else if (dp[i + 1][j] >= dp[i][j + 1]) { ops.push(["-", a[i], null]); i++; }
      else { ops.push(["+", null, b[j]]); j++; }
    }
    while (i < n) ops.push(["-", a[i++], null]);
    while (j < m) ops.push(["+", null, b[j++]]);
    return ops;
  }
  function clauseText(c) { return c.toks.map(norm).join(" "); }
  function tokenDiff(oldToks, newToks) {
    var span = el("span", {cls: "sql"});
    lcs(oldToks, newToks, function (x, y) { return norm(x) === norm(y); }).forEach(function (op) {
      if (op[0] === "=") span.appendChild(document.createTextNode(op[2] + " "));
      else if (op[0] === "-") { span.appendChild(el("del", {text: op[1]})); span.appendChild(document.createTextNode(" ")); }
      else { span.appendChild(el("ins", {text: op[2]})); span.appendChild(document.createTextNode(" ")); }
    });
    return span;
  }
  function sqlDiff(oldSql, newSql, what) {
    // One line per clause: "=" same, "~" changed (words marked), "-" only in the old SQL, "+" only in the new.
    var a = clauses(oldSql), b = clauses(newSql);
    var ops = lcs(a, b, function (x, y) { return clauseText(x) === clauseText(y); });
    var box = el("div", {cls: "diff", role: "group", "aria-label": "difference " + what});
    var changed = [];
    for (var i = 0; i < ops.length; i++) {
      var op = ops[i], next = ops[i + 1];
      if (op[0] === "-" && next && next[0] === "+" && next[2].label === op[1].label) {
        changed.push(op[1].label || "start");
        box.appendChild(clauseLine("changed", "~", op[1].label, tokenDiff(op[1].toks, next[2].toks)));
        i++;
      } else if (op[0] === "=") box.appendChild(clauseLine("same", "=", op[2].label, el("span", {cls: "sql", text: op[2].toks.join(" ")})));
      else if (op[0] === "-") { changed.push(op[1].label); box.appendChild(clauseLine("removed", "-", op[1].label, el("del", {cls: "sql", text: op[1].toks.join(" ")}))); }
      else { changed.push(op[2].label); box.appendChild(clauseLine("added", "+", op[2].label, el("ins", {cls: "sql", text: op[2].toks.join(" ")}))); }
    }
    var title = el("p", {cls: "diff-title"}, [el("strong", {text: "Diff " + what + ": "}), changed.length ? "changed clauses: " + Array.from(new Set(changed)).join(", ") : "no change"]);
    return el("div", {}, [title, box]);
  }
  function clauseLine(kind, mark, label, body) {
    return el("div", {cls: "clause " + kind, "data-clause": label, "data-change": kind}, [el("span", {cls: "mark", "aria-label": kind, text: mark}), el("span", {cls: "label", text: label}), body]);
  }

  // ---- example view -----------------------------------------------------------------------------
  function drawDetail(item) {
    var box = document.getElementById("detail");
    box.textContent = "";
    box.setAttribute("data-id", item.id);
    var d = item.detail, ctx = d.context || null, record = d.record || {};
    box.appendChild(el("h2", {text: (item.id.charAt(0) === "#" ? "Example " : "") + item.id + (record.db_id ? " \u2014 " + record.db_id : "")}));
    if (ctx && ctx.question) box.appendChild(el("p", {cls: "question"}, [el("strong", {text: "Question: "}), ctx.question]));
    if (ctx && ctx.gold_sql) { box.appendChild(el("h3", {text: "Gold SQL"})); box.appendChild(el("pre", {cls: "sql gold", text: ctx.gold_sql})); }
    if (ctx && ctx.tables && ctx.tables.length) {
      var schema = (data.schemas || {})[ctx.db_id] || {};
      box.appendChild(el("h3", {text: "Schema excerpt (tables the gold and the prediction name)"}));
      var t = el("table", {cls: "data"}, [el("tr", {}, [el("th", {text: "table"}), el("th", {text: "columns"})])]);
      ctx.tables.forEach(function (name) { t.appendChild(el("tr", {}, [el("td", {cls: "mono", text: name}), el("td", {cls: "mono", text: (schema[name] || []).join(", ")})])); });
      box.appendChild(t);
    }
    if (ctx && ctx.problem) box.appendChild(el("p", {cls: "notes", text: "note: " + ctx.problem}));
    if (d.compare) { drawCompare(box, d.compare, ctx); }
    else if (record.turns) drawTurns(box, record.turns, ctx);
    else if (data.kind === "eval") drawTurns(box, [record], ctx);  // an eval record is its answer's one turn
    if (record.reward && record.reward.components) drawReward(box, record.reward);
    else if (d.reward && d.reward.components && Object.keys(d.reward.components).length) drawReward(box, d.reward);
    // The records keep the first rows; the contexts of run folders from before that (a rollout's) held them.
    var results = {gold: record.gold_result || (ctx && ctx.gold), predicted: record.pred_result || (ctx && ctx.predicted)};
    if (results.gold || results.predicted) drawResults(box, results, record.reason);
    if (d.findings && d.findings.length) {
      box.appendChild(el("h3", {text: "Audit findings"}));
      box.appendChild(rowsTable(d.findings.map(function (f) { return {check: f.check, evidence: f.evidence}; })));
    }
    box.appendChild(el("details", {}, [el("summary", {text: "the record (samples.jsonl; empty fields left out)"}), el("pre", {cls: "mono report", text: JSON.stringify(record, null, 2)})]));
  }
  function drawTurns(box, turns, ctx) {
    box.appendChild(el("h3", {text: turns.length === 1 ? "Answer" : "Turns (" + turns.length + ")"}));
    turns.forEach(function (turn, i) {
      var part = el("section", {cls: "turn", "data-turn": String(turn.turn || i + 1), "aria-label": "turn " + (turn.turn || i + 1)});
      var verdict = turn.verdict || (turn.match ? "match" : "");
      part.appendChild(el("h4", {}, ["Turn " + (turn.turn || i + 1) + ": ", el("span", {cls: verdictClass(verdict), text: verdict || "n/a"}),
        turn.f !== undefined && turn.f !== null ? "  F = " + fmt(turn.f) : "", turn.f_struct !== undefined && turn.f_struct !== null ? "  F_struct = " + fmt(turn.f_struct) : ""]));
      part.appendChild(el("pre", {cls: "sql turn-sql", text: turn.sql || "(no SQL)"}));
      if (turn.exec_error) part.appendChild(el("p", {cls: "mono", text: "execution error: " + turn.exec_error}));
      if (turn.format_problem) part.appendChild(el("p", {text: "format problem: " + turn.format_problem}));
      if (turn.reason) part.appendChild(el("p", {text: "verdict reason: " + turn.reason}));
      var tags = el("p", {cls: "tags"}, [el("strong", {text: "ODT tags: "})]);
      (turn.tags || []).forEach(function (tag) { tags.appendChild(el("span", {cls: "tag", text: tag})); });
      if (!(turn.tags || []).length) tags.appendChild(document.createTextNode("none"));
      part.appendChild(tags);
      if ((turn.findings || []).length) part.appendChild(findingList(turn.findings));
      if (turn.feedback) part.appendChild(el("div", {cls: "feedback", role: "note"}, [el("strong", {text: "Feedback the model saw next: "}), turn.feedback]));
      if (i > 0 && turns[i - 1].sql && turn.sql) part.appendChild(sqlDiff(turns[i - 1].sql, turn.sql, "against turn " + (turns[i - 1].turn || i)));
      if (ctx && ctx.gold_sql && turn.sql) part.appendChild(sqlDiff(ctx.gold_sql, turn.sql, "against the gold"));
      if (turn.response && turn.response !== turn.sql) part.appendChild(el("details", {}, [el("summary", {text: "full response"}), el("pre", {cls: "mono report", text: turn.response})]));
      box.appendChild(part);
    });
  }
  function findingList(findings) {
    // Where the ODT found each tag: the path of nested clauses from the main query ("where / from": a FROM subquery inside a WHERE subquery).
    var list = el("ul", {cls: "findings", "aria-label": "ODT tags with their locations"});
    findings.forEach(function (f) {
      var where = (f.location || []).join(" / ");
      list.appendChild(el("li", {cls: "finding", "data-tag": f.tag, "data-location": where},
        [el("span", {cls: "finding-tag", text: f.tag}), " at ", el("span", {cls: "where", text: where || "the main query"})]));
    });
    return el("div", {cls: "where-found"}, [el("strong", {text: "Where the ODT found them: "}), list]);
  }
  function drawCompare(box, pair, ctx) {
    ["a", "b"].forEach(function (side) {
      var d = pair[side] || {};
      var turns = d.record ? [d.record] : [];
      box.appendChild(el("h3", {text: "Run " + side.toUpperCase()}));
      var inner = el("div", {cls: "side-" + side});
      drawTurns(inner, turns, ctx);
      var record = d.record || {};
      if (record.gold_result || record.pred_result) drawResults(inner, {gold: record.gold_result, predicted: record.pred_result}, record.reason);
      box.appendChild(inner);
    });
    var a = (pair.a || {}).record, b = (pair.b || {}).record;
    if (a && b && a.sql && b.sql) box.appendChild(sqlDiff(a.sql, b.sql, "B against A"));
  }
  function drawReward(box, reward) {
    box.appendChild(el("h3", {text: data.kind === "train" ? "Reward components (means of the step)" : "Reward of the trajectory"}));
    var rows = Object.keys(reward.components).map(function (k) { return {component: k, value: reward.components[k]}; });
    rows.push({component: "total", value: reward.total});
    box.appendChild(rowsTable(rows));
  }
  function drawResults(box, ctx, reason) {  // ctx: {gold, predicted} previews
    box.appendChild(el("h3", {text: "Results (first rows)"}));
    if (reason) box.appendChild(el("p", {text: "verdict reason: " + reason}));
    var key = function (row) { return JSON.stringify(row); };
    var count = function (rows) { var c = {}; (rows || []).forEach(function (r) { c[key(r)] = (c[key(r)] || 0) + 1; }); return c; };
    var gold = ctx.gold, pred = ctx.predicted;
    var cg = count(gold && gold.rows), cp = count(pred && pred.rows);
    [["gold", gold, cp], ["prediction", pred, cg]].forEach(function (entry) {
      var name = entry[0], res = entry[1], other = entry[2];
      if (!res) { box.appendChild(el("p", {text: name + ": not run"})); return; }
      var head = name + ": " + res.status + (res.row_count !== null && res.row_count !== undefined ? ", " + res.row_count + " row(s)" : "") + (res.truncated ? " (truncated)" : "") + (res.error ? " \u2014 " + res.error : "");
      box.appendChild(el("p", {}, [el("strong", {text: head})]));
      if (!res.columns.length) return;
      var t = el("table", {cls: "data results-" + name}, [el("tr", {}, res.columns.map(function (c) { return el("th", {text: c}); }).concat([el("th", {text: "in the other's first rows"})]))]);
      var left = Object.assign({}, other);
      res.rows.forEach(function (row) {
        var k = key(row), found = left[k] > 0;
        if (found) left[k]--;
        var cells = row.map(function (v) { return el("td", {cls: "mono", text: fmt(v)}); });
        cells.push(el("td", {cls: found ? "" : "only", text: found ? "yes" : "no: differs"}));
        t.appendChild(el("tr", {"data-differs": found ? "no" : "yes"}, cells));
      });
      box.appendChild(t);
    });
    box.appendChild(el("p", {cls: "hint", text: "Rows are compared on the first rows shown here, as multisets; the verdict used every row."}));
  }

  // ---- plots and report ---------------------------------------------------------------------------
  function drawExtras() {
    var box = document.getElementById("extras");
    if (data.plots.length) {
      box.appendChild(el("h2", {text: "Plots"}));
      data.plots.forEach(function (p) { box.appendChild(el("img", {src: p.src, alt: "plot " + p.name, title: p.name})); });
    }
    data.runs.forEach(function (run, i) {
      if (run.report) box.appendChild(el("details", {}, [el("summary", {text: "report.md" + (data.runs.length > 1 ? " of run " + "AB"[i] : "")}), el("pre", {cls: "report", text: run.report})]));
    });
  }

  // ---- print: every shown row, not only the visible ones ----------------------------------------------
  window.addEventListener("beforeprint", function () {
    var table = document.getElementById("table");
    Object.keys(drawn).forEach(function (k) { drawn[k].remove(); }); drawn = {};
    spacer.style.height = "0";
    for (var pos = 0; pos < Math.min(shown.length, 2000); pos++) { drawn[pos] = rowNode(pos); table.appendChild(drawn[pos]); }
  });
  window.addEventListener("afterprint", function () { sizeTable(); drawRows(true); });

  if (data.version !== DATA_VERSION) {
    document.getElementById("header").textContent = "This page's data has layout version " + data.version + "; this page reads version " + DATA_VERSION + ".";
    return;
  }
  document.title = data.title;
  drawHeader();
  drawFilters();
  drawTable();
  drawExtras();
  apply();
  performance.mark("view:drawn");
  document.body.setAttribute("data-ready", "true");
})();
