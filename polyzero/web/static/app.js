"use strict";
// polyzero's web page: no framework, no build step. The server's JSON views are drawn
// as they come (REST for actions, a WebSocket per game for live updates).

const $ = (sel) => document.querySelector(sel);
let session = null;      // the current game's latest view
let socket = null;
let selected = null;     // [r, c] of a piece picked to move (Breakthrough, chess)

async function api(method, path, body) {
  const res = await fetch(path, {method, headers: {"Content-Type": "application/json"},
                                 body: body === undefined ? undefined : JSON.stringify(body)});
  const data = await res.json().catch(() => ({error: `HTTP ${res.status}`}));
  if (!res.ok) throw new Error(data.error || `HTTP ${res.status}`);
  return data;
}

function showError(message) { $("#error").textContent = message || ""; }

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

// ------------------------------------------------------------------ games
async function newGame(event) {
  event.preventDefault();
  showError("");
  try {
    const view = await api("POST", "/api/sessions", {
      game: $("#game-input").value.trim(),
      players: [$("#seat0").value.trim(), $("#seat1").value.trim()],
      seed: Number($("#seed").value || 0)});
    connect(view);
  } catch (e) { showError(e.message); }
}

function connect(view) {
  if (socket) socket.close();
  session = view;
  selected = null;
  render(view);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws/sessions/${view.id}`);
  socket.onmessage = (msg) => accept(JSON.parse(msg.data));
}

function accept(v) {
  // the WebSocket and a request's answer may arrive in either order: keep the newest view
  if (session && v.id === session.id && v.version >= session.version) { session = v; render(v); }
}

async function play(action) {
  if (!session) return;
  showError("");
  selected = null;
  try { accept(await api("POST", `/api/sessions/${session.id}/move`, {action})); }
  catch (e) { showError(e.message); }
}

async function undo() {
  try { accept(await api("POST", `/api/sessions/${session.id}/undo`)); }
  catch (e) { showError(e.message); }
}

async function hint() {
  // a learned player's search of the position in front of the person, drawn like an agent's
  showError("");
  try {
    const a = await api("POST", `/api/sessions/${session.id}/analyse`, {});
    session = {...session, analysis: a};
    render(session);
  } catch (e) { showError(e.message); }
}

function statusText(v) {
  if (v.terminal) {
    const r = v.returns;
    if (v.viewer === null) return `Game over: returns ${r.join(" / ")}`;
    const mine = r[v.viewer];
    return `Game over: ${mine > 0 ? "you win" : mine < 0 ? "you lose" : "draw"} (return ${mine})`;
  }
  if (v.thinking || (v.to_move !== null && !v.seats[v.to_move].human))
    return `${v.seats[v.to_move]?.player ?? "a player"} is thinking…`;
  if (v.legal.length) return `Your move (seat ${v.to_move}, ${v.seats[v.to_move].side})`;
  return "";
}

function render(v) {
  $("#game").hidden = false;
  $("#header").textContent = v.header;
  $("#seats").textContent = v.seats.map((s, i) => `seat ${i} (${s.side}): ${s.player}`).join(" · ") +
    (v.viewer === null ? " · you are watching" : ` · you play seat ${v.viewer}`);
  $("#status").textContent = statusText(v);
  $("#text").textContent = v.text;
  $("#text").hidden = Boolean(v.board || v.map);
  $("#undo").disabled = !v.can_undo || v.thinking;
  $("#hint").hidden = v.board === null;
  drawBoard(v);
  drawMap(v);
  showMoves(v, v.legal);
  const moves = $("#moves");
  if (!v.legal.length) moves.append(el("span", {class: "muted", text: v.terminal ? "none: the game is over" : "not your turn"}));
  $("#log").replaceChildren(...v.log.map((e) => el("li", {class: e.chance ? "chance" : ""},
    e.chance ? `chance: ${e.text}` : `seat ${e.seat}: ${e.text}`)));
  $("#log").scrollTop = 1e9;
  drawAnalysis(v.analysis);
}

const CHESS = {K: "♔", Q: "♕", R: "♖", B: "♗", N: "♘", P: "♙", k: "♚", q: "♛", r: "♜", b: "♝", n: "♞", p: "♟"};
const COLOURS = {connect_four: {x: "red", o: "yellow"}, othello: {x: "black", o: "white"},
                 go: {X: "black", O: "white"}, hex: {x: "red", o: "blue"}, breakthrough: {b: "black", w: "white"}};

function piece(kind, ch) {
  if (ch === "." ) return kind === "connect_four" ? el("div", {class: "hole"}) : "";
  if (kind === "chess") return CHESS[ch] || ch;
  if (kind === "tic_tac_toe") return ch.toUpperCase();
  const colour = (COLOURS[kind] || {})[ch];
  return colour ? el("div", {class: `disc ${colour}`}) : ch;
}

function overlayOf(v) {
  // action -> visits and the first move of the principal variation, for the board
  const a = v.analysis;
  // the agent's latest search, while it is the move just played or the one before
  if (!a || !$("#overlay").checked || v.log.length - a.ply > 2) return null;
  const total = a.moves.reduce((s, m) => s + m.visits, 0) || 1;
  return {visits: new Map(a.moves.map((m) => [m.action, m.visits])), total, best: a.action};
}

function drawBoard(v) {
  const root = $("#board");
  root.replaceChildren();
  const b = v.board;
  if (!b) return;
  const targets = new Map(b.targets.map(([r, c, a]) => [`${r},${c}`, a]));
  const columnTarget = new Map(b.targets.map(([r, c, a]) => [c, a]));
  const fromCells = new Set(b.moves.map(([f]) => f.join(",")));
  const toCells = new Map();
  if (selected) for (const [f, t, a] of b.moves) if (f.join(",") === selected.join(",")) toCells.set(t.join(","), a);
  const cellOfAction = new Map(b.targets.map(([r, c, a]) => [a, `${r},${c}`]));
  for (const [f, t, a] of b.moves) cellOfAction.set(a, t.join(","));
  const over = overlayOf(v);
  const board = el("div", {class: `board b-${b.kind}`, "data-kind": b.kind});
  const header = () => el("div", {class: "brow"}, el("div", {class: "label"}),
    ...b.cols.map((c) => el("div", {class: "label collabel", text: c})));
  board.append(header());
  b.cells.forEach((row, r) => {
    const line = el("div", {class: "brow"});
    if (b.kind === "hex") line.style.paddingLeft = `${r * 17}px`;
    line.append(el("div", {class: "label", text: b.rows[r]}));
    [...row].forEach((ch, c) => {
      const key = `${r},${c}`;
      const cell = el("div", {class: "cell", "data-r": r, "data-c": c}, piece(b.kind, ch));
      if ((b.kind === "chess" || b.kind === "breakthrough") && (r + c) % 2) cell.classList.add("dark");
      let action = targets.get(key);
      if (action === undefined && b.kind === "connect_four") action = columnTarget.get(c);
      if (v.legal.length && action !== undefined) {
        cell.classList.add("target");
        cell.addEventListener("click", () => play(action));
      } else if (v.legal.length && toCells.has(key)) {
        cell.classList.add("to");
        cell.addEventListener("click", () => play(toCells.get(key)));
      } else if (v.legal.length && fromCells.has(key)) {
        cell.classList.add("from");
        if (selected && selected.join(",") === key) cell.classList.add("selected");
        cell.addEventListener("click", () => { selected = [r, c]; drawBoard(session); });
      }
      if (over) {
        for (const [a, n] of over.visits) {
          if (cellOfAction.get(a) !== key || !n) continue;
          cell.classList.add("heat");
          cell.style.setProperty("--heat", (0.15 + 0.6 * n / over.total).toFixed(2));
          cell.append(el("span", {class: "visits", text: n}));
          if (a === over.best) cell.classList.add("pv1");
        }
      }
      line.append(cell);
    });
    line.append(el("div", {class: "label", text: b.rows[r]}));
    board.append(line);
  });
  board.append(header());
  root.append(board);
}

function showMoves(v, list) {
  // the legal moves as buttons (all of them, or those of one station clicked on the map)
  $("#moves").replaceChildren(...list.map((m) =>
    el("button", {type: "button", "data-action": m.action, onclick: () => play(m.action)}, m.text)));
  if (list !== v.legal) $("#moves").append(el("button", {type: "button", onclick: () => showMoves(v, v.legal)}, "all moves"));
}

// Scotland Yard: the map as an SVG graph (stations at the board's positions, connections
// coloured by transport); a click on a station plays the move there, or lists the tickets
// that reach it when several do.
const TRANSPORT_COLOURS = {taxi: "#e0b000", bus: "#2e7d32", underground: "#c62828", ferry: "#263238"};

function drawMap(v) {
  const root = $("#map");
  root.replaceChildren();
  const m = v.map;
  if (!m) return;
  const ns = "http://www.w3.org/2000/svg";
  const xs = m.stations.map((s) => s[1]), ys = m.stations.map((s) => s[2]);
  const x0 = Math.min(...xs), y0 = Math.min(...ys), span = Math.max(Math.max(...xs) - x0, Math.max(...ys) - y0) || 1;
  const big = m.stations.length > 20, W = big ? 1000 : 560, pad = big ? 14 : 24, R = big ? 9 : 16;
  const scale = (W - 2 * pad) / span;
  const H = Math.round((Math.max(...ys) - y0) * scale + 2 * pad);
  const at = new Map(m.stations.map(([s, x, y]) => [s, [pad + (x - x0) * scale, pad + (y - y0) * scale]]));
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "sy-map"); svg.setAttribute("width", W); svg.setAttribute("height", H);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const add = (parent, tag, attrs, text) => { const n = document.createElementNS(ns, tag);
    for (const [k, val] of Object.entries(attrs)) n.setAttribute(k, val); if (text !== undefined) n.textContent = text;
    parent.append(n); return n; };
  const order = {taxi: 0, bus: 1, underground: 2, ferry: 3};
  for (const [a, b, t] of m.edges.slice().sort((p, q) => order[p[2]] - order[q[2]])) {
    const [xa, ya] = at.get(a), [xb, yb] = at.get(b);
    add(svg, "line", {x1: xa, y1: ya, x2: xb, y2: yb, stroke: TRANSPORT_COLOURS[t], "stroke-width": t === "taxi" ? 1.5 : 3,
                      "stroke-dasharray": t === "ferry" ? "6 4" : "none", class: `edge ${t}`});
  }
  const targets = new Map();  // station -> legal moves that end there
  for (const mv of v.legal) if (mv.action < 4 * m.num_stations) {
    const s = mv.action % m.num_stations + 1;
    targets.set(s, [...(targets.get(s) || []), mv]);
  }
  const detectives = new Map(m.detectives.map((s, k) => [s, k + 1]));
  const possible = new Set(m.possible);
  for (const [s] of m.stations) {
    const [x, y] = at.get(s);
    const g = add(svg, "g", {class: "station", "data-station": s});
    let fill = "#fff", label = String(s), colour = "#222";
    if (possible.has(s)) { fill = "#ffcc80"; g.classList.add("possible"); }
    if (m.mrx === s) { fill = "#212121"; colour = "#fff"; label = "X"; g.classList.add("mrx"); }
    if (detectives.has(s)) {
      const k = detectives.get(s);
      fill = m.to_move === k ? "#0d47a1" : "#42a5f5"; colour = "#fff"; label = `D${k}`; g.classList.add("detective");
    }
    const circle = add(g, "circle", {cx: x, cy: y, r: R, fill, stroke: "#333", "stroke-width": 1});
    add(g, "text", {x, y: y + (big ? 3 : 5), "text-anchor": "middle", "font-size": big ? 8 : 13, fill: colour}, label);
    add(g, "title", {}, `station ${s}`);
    const moves = targets.get(s);
    if (moves) {
      g.classList.add("target");
      circle.setAttribute("stroke", "#00c853"); circle.setAttribute("stroke-width", 3);
      g.addEventListener("click", () => (moves.length === 1 ? play(moves[0].action) : showMoves(v, moves)));
    }
  }
  root.append(svg);
  const t = m.mrx_tickets;
  root.append(el("p", {class: "muted", text:
    `Mr X: taxi ${t[0]} bus ${t[1]} underground ${t[2]} black ${t[3]} double ${t[4]} · log: ` +
    (m.log.map(([ticket, st], i) => `${i + 1}:${ticket}${st ? "@" + st : ""}`).join(" ") || "–") +
    (m.possible.length ? ` · Mr X may be at ${m.possible.length} stations` : "")}));
  root.append(el("p", {class: "muted", text: m.detectives.map((s, k) =>
    `D${k + 1} at ${s}: taxi ${m.detective_tickets[k][0]} bus ${m.detective_tickets[k][1]} ` +
    `underground ${m.detective_tickets[k][2]}`).join(" · ")}));
}

function drawAnalysis(a) {
  const box = $("#analysis");
  if (!a) { box.replaceChildren(el("p", {class: "muted", text: "An agent's search appears here after it moves."})); return; }
  const fmt = (x) => (x === null || x === undefined ? "–" : (x >= 0 ? "+" : "") + x.toFixed(3));
  const rows = a.moves.slice(0, 8).map((m) => el("tr", {},
    el("td", {text: m.text + (m.action === a.action ? " ←" : "")}), el("td", {text: m.visits}),
    el("td", {text: fmt(m.q)}), el("td", {text: m.prior.toFixed(3)})));
  box.replaceChildren(
    el("p", {}, `${a.player} (seat ${a.seat}), ${a.simulations} simulations: value ${fmt(a.value)} for itself ` +
                `(network ${fmt(a.network_value)})`),
    el("table", {class: "analysis"}, el("tr", {}, el("th", {text: "move"}), el("th", {text: "visits"}),
       el("th", {text: "Q"}), el("th", {text: "prior"})), ...rows),
    el("p", {}, "principal variation: ", el("code", {text: a.pv.join(" ") || "–"})));
}

// ------------------------------------------------------------------ runs
function chart(title, curves, {ylo = null, yhi = null} = {}) {
  // curves: [{name, points: [[x, y]], band: [[x, lo, hi]]}] -> an SVG line chart
  const W = 460, H = 240, L = 48, R = 10, T = 22, B = 30;
  const xs = curves.flatMap((c) => c.points.map((p) => p[0]));
  const ys = curves.flatMap((c) => c.points.map((p) => p[1]).concat((c.band || []).flatMap((b) => [b[1], b[2]])));
  if (!xs.length) return el("p", {class: "muted", text: `${title}: nothing recorded`});
  const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1;
  const y0 = ylo ?? Math.min(...ys), y1 = yhi ?? Math.max(...ys);
  const sx = (x) => L + (W - L - R) * (x - x0) / ((x1 - x0) || 1);
  const sy = (y) => H - B - (H - T - B) * (y - y0) / ((y1 - y0) || 1);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart"); svg.setAttribute("width", W); svg.setAttribute("height", H);
  const add = (tag, attrs, text) => { const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v); if (text !== undefined) n.textContent = text; svg.append(n); return n; };
  add("text", {x: L, y: 14}, title);
  add("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999"});
  add("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#999"});
  for (const y of [y0, (y0 + y1) / 2, y1]) add("text", {x: 4, y: sy(y) + 4}, Number(y.toPrecision(3)));
  add("text", {x: L, y: H - 8}, x0); add("text", {x: W - R - 40, y: H - 8}, `${x1} steps`);
  const palette = ["#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b"];
  curves.forEach((c, i) => {
    const colour = palette[i % palette.length];
    if (c.band && c.band.length) {
      const upper = c.band.map((b) => `${sx(b[0])},${sy(b[2])}`);
      const lower = c.band.slice().reverse().map((b) => `${sx(b[0])},${sy(b[1])}`);
      add("polygon", {points: upper.concat(lower).join(" "), fill: colour, "fill-opacity": 0.15, stroke: "none"});
    }
    add("polyline", {points: c.points.map((p) => `${sx(p[0])},${sy(p[1])}`).join(" "), fill: "none",
                     stroke: colour, "stroke-width": 1.5});
    add("text", {x: W - R - 150, y: T + 12 * i, fill: colour}, c.name);
  });
  return svg;
}

async function showRun(name) {
  const view = $("#run-view");
  view.replaceChildren(el("h2", {text: name}));
  try {
    const {series} = await api("GET", `/api/runs/${encodeURIComponent(name)}/metrics`);
    const train = series.train || {}, ev = series.eval || {};
    const losses = Object.keys(train).filter((k) => k.startsWith("loss/"))
      .map((k) => ({name: k, points: train[k].map((p) => [p[0], p[2]])}));
    view.append(chart("training losses", losses));
    const scores = Object.keys(ev).filter((k) => k.endsWith("/score")).map((k) => {
      const base = k.slice(0, -"/score".length), lo = ev[`${base}/ci_low`] || [], hi = ev[`${base}/ci_high`] || [];
      return {name: base.replace("eval/", "vs "), points: ev[k].map((p) => [p[0], p[2]]),
              band: lo.length === ev[k].length ? lo.map((p, i) => [p[0], p[2], hi[i][2]]) : []};
    });
    if (scores.length) view.append(chart("evaluation score, 95% CI", scores, {ylo: 0, yhi: 1}));
    const ret = ev["eval/return/mean"];
    if (ret) view.append(chart("evaluation return", [{name: "mean return", points: ret.map((p) => [p[0], p[2]])}]));
  } catch (e) { view.append(el("p", {class: "muted", text: e.message})); }
  try {
    const ladder = await api("GET", `/api/runs/${encodeURIComponent(name)}/ladder`);
    const levels = (ladder.summary && ladder.summary.levels) || {};
    const curves = Object.entries(levels).map(([lvl, info]) => ({name: `MCTS-Solver ${lvl}x (AUC ${info.auc.toFixed(1)})`,
      points: info.steps.map((s, i) => [s, info.windowed[i]])}));
    view.append(chart("ladder: windowed win rate", curves, {ylo: 0, yhi: 1}));
  } catch (e) { view.append(el("p", {class: "muted", text: e.message})); }
}

// ------------------------------------------------------------------ start
function switchTab(name) {
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.dataset.tab === name);
  $("#play").hidden = name !== "play";
  $("#runs").hidden = name !== "runs";
}

async function init() {
  const info = await api("GET", "/api/info");
  $("#version").textContent = `polyzero ${info.version}`;
  $("#games").replaceChildren(...info.games.map((g) => el("option", {value: g})));
  $("#players").replaceChildren(...info.players.map((p) => el("option", {value: p})));
  $("#run-list").replaceChildren(...info.runs.map((r) => el("li", {},
    el("button", {type: "button", onclick: () => showRun(r.name)}, r.name),
    ` ${r.algo ?? "?"} on ${r.game ?? "?"}${r.ladder ? ", ladder" : ""}`)));
  if (!info.runs.length) $("#run-list").append(el("li", {class: "muted", text: "none given"}));
  $("#new-game").addEventListener("submit", newGame);
  $("#undo").addEventListener("click", undo);
  $("#hint").addEventListener("click", hint);
  $("#overlay").addEventListener("change", () => session && render(session));
  for (const t of document.querySelectorAll(".tab")) t.addEventListener("click", () => switchTab(t.dataset.tab));
}

init().catch((e) => showError(e.message));
