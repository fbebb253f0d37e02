// The page's stylesheet and its one small script, served from the binary itself (/assets/…): the
// Content-Security-Policy allows scripts and styles from this origin only, so nothing inline runs.
//
// The script: live updates for the page. On `head` (the log grew) it fetches the page's fragment and
// swaps `main`; on `tail` it appends the running attempt's new output to the live tail, as text.
// Without JavaScript the page is whole as served, and refreshes itself every 15 s (<noscript>).
//
// A browser opens at most six HTTP/1.1 connections to one host, and a stream holds one for as long as
// the page is open: with one EventSource per tab, the seventh tab's page never loaded. So the streams
// live in one SharedWorker per browser (WORKER_JS), shared by every tab that asks for the same stream,
// and at most MAX_STREAMS of them: past that a tab polls its fragment, and asks again for a stream as
// tabs close. Where there is no SharedWorker, a tab holds its own stream, as before.

export const CSS = `
:root { --fg: #1d2330; --muted: #667085; --bg: #ffffff; --alt: #f5f7fa; --line: #d9dee7;
  --launching: #b8c4d6; --agent: #3b82f6; --verify: #a855f7; --landing: #14b8a6; --checks: #f59e0b; --rework: #ec4899; --step: #e5e7eb; --closing: #99f6e4; --setup: #64748b; --airlock: #fcd34d;
  --passed: #16a34a; --failed: #dc2626; --warn: #d97706; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
nav.crumbs { padding: 8px 16px; background: #111827; color: #e5e7eb; font-size: 13px; display: flex; gap: 4px; }
nav.crumbs a { color: #93c5fd; text-decoration: none; }
.conn { margin-left: auto; color: #9ca3af; }
main, footer, .live-tail { padding: 0 16px; }
footer { color: var(--muted); font-size: 12px; padding-bottom: 16px; }
h1 { font-size: 22px; margin: 14px 0 6px; }
h2 { font-size: 16px; margin: 18px 0 8px; }
h3 { font-size: 14px; margin: 12px 0 6px; }
code, pre { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre.log:empty { display: none; }
pre.log { background: #0f172a; color: #e2e8f0; padding: 8px 10px; border-radius: 4px; max-height: 420px; overflow: auto; white-space: pre-wrap; word-break: break-word; }
.reason { margin: 4px 0; color: #374151; }
.meta, .note { color: var(--muted); }
.state, .st { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #e5e7eb; vertical-align: middle; }
.state-running { background: #dbeafe; color: #1e40af; } .state-paused, .state-stopped { background: #fef3c7; color: #92400e; }
.state-drained { background: #dcfce7; color: #166534; } .state-error { background: #fee2e2; color: #991b1b; }
.st-passed { background: #dcfce7; color: #166534; } .st-failed, .st-blocked, .st-landing_blocked { background: #fee2e2; color: #991b1b; }
.st-running, .st-launching, .st-ended { background: #dbeafe; color: #1e40af; } .st-needs_input { background: #fef3c7; color: #92400e; }
.st-skipped, .st-cancelled, .st-withdrawn, .st-reset, .st-requeued { background: #f3f4f6; color: #4b5563; }
.outcome-Succeeded { color: var(--passed); font-weight: 600; } .outcome-Failed { color: var(--failed); font-weight: 600; }
.attention { border: 1px solid #f59e0b; background: #fffbeb; border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.attention .fix { margin-top: 4px; } .attention code { background: #fef3c7; padding: 1px 4px; border-radius: 3px; }
ul.counts { list-style: none; padding: 0; margin: 8px 0; display: flex; flex-wrap: wrap; gap: 6px; }
li.count { padding: 2px 10px; border-radius: 12px; background: #f3f4f6; }
.spend { font-weight: 600; } .unhealthy { color: var(--failed); }
.timeline-box .scroll { overflow-x: auto; max-width: 100%; width: fit-content; border: 1px solid var(--line); border-radius: 4px; }
svg.timeline { display: block; font: 12px system-ui, sans-serif; }
svg.timeline .row-bg { fill: #ffffff; } svg.timeline .row-bg.odd { fill: var(--alt); }
svg.timeline .axis line { stroke: var(--line); stroke-width: 1; } svg.timeline .axis text { fill: var(--muted); font-size: 11px; }
svg.timeline .label { fill: #1d4ed8; } svg.timeline .why { fill: #4b5563; }
svg.timeline .outcome .st { fill: var(--fg); font-weight: 600; }
svg.timeline .outcome .st-passed { fill: var(--passed); } svg.timeline .outcome .st-failed, svg.timeline .outcome .st-blocked, svg.timeline .outcome .st-landing_blocked { fill: var(--failed); }
svg.timeline .outcome .st-running, svg.timeline .outcome .st-launching, svg.timeline .outcome .st-ended { fill: var(--agent); }
svg.timeline .outcome .st-needs_input { fill: var(--warn); }
.ph-launching { fill: var(--launching); background: var(--launching); } .ph-agent { fill: var(--agent); background: var(--agent); }
.ph-verify { fill: var(--verify); background: var(--verify); } .ph-landing { fill: var(--landing); background: var(--landing); }
.ph-checks { fill: var(--checks); background: var(--checks); } .ph-rework { fill: var(--rework); background: var(--rework); }
.ph-step { fill: var(--step); background: var(--step); } .ph-closing { fill: var(--closing); background: var(--closing); } .ph-setup { fill: var(--setup); background: var(--setup); } .ph-airlock { fill: var(--airlock); background: var(--airlock); }
.end-passed { fill: var(--passed); background: var(--passed); } .end-failed, .end-blocked, .end-landing_blocked { fill: var(--failed); background: var(--failed); }
.end-requeued, .end-skipped, .end-cancelled, .end-reset { fill: #6b7280; background: #6b7280; }
.att-passed { fill: var(--passed); } .att-failed, .att-blocked, .att-landing_blocked { fill: var(--failed); }
.att-open { fill: var(--agent); } .att-requeued, .att-reset, .att-ended, .att-skipped, .att-cancelled { fill: #9ca3af; }
.wait-needs_input { stroke: var(--warn); stroke-width: 1; }
.hatch-bg { fill: #fef3c7; } .hatch-line { stroke: #f59e0b; stroke-width: 2; }
.lw-paused, .lw-stopped { fill: #9ca3af; fill-opacity: 0.18; background: rgba(156,163,175,0.35); }
.lw-environment { fill: #ef4444; fill-opacity: 0.15; background: rgba(239,68,68,0.3); }
ul.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 12px; color: #374151; font-size: 12px; }
ul.legend svg { vertical-align: middle; }
.legend-end { display: inline-block; width: 3px; height: 10px; vertical-align: middle; }
table.items { border-collapse: collapse; width: 100%; }
table.items th, table.items td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
table.items td.path { color: var(--muted); font-size: 12px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; }
section.attempt { border: 1px solid var(--line); border-radius: 6px; padding: 4px 12px 8px; margin: 10px 0; }
ul.phases { list-style: none; padding: 0; margin: 4px 0; color: #374151; font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border-radius: 2px; }
.question { font-weight: 600; }
.error { color: var(--failed); }
.actions { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0; } form.act { display: inline-flex; gap: 4px; margin: 0; }
.act-result { margin: 0; padding: 4px 16px; background: var(--alt); } .act-result:empty { display: none; } .act-result[data-ok="0"] { color: var(--failed); }
`;

export const JS = `"use strict";
(function () {
  var body = document.body;
  var stream = body.getAttribute("data-stream");
  var fragment = body.getAttribute("data-fragment");
  if (!stream || !fragment || !window.EventSource || !window.fetch) return;
  var conn = document.getElementById("conn");
  var busy = false, again = false;
  function say(text) { if (conn) conn.textContent = text; }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(fragment, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        var seq = r.headers.get("X-Loop-Seq");
        return r.text().then(function (text) {
          document.getElementById("live").innerHTML = text;
          if (seq) body.setAttribute("data-seq", seq);
          say("live · seq " + (seq || "?"));
        });
      })
      .catch(function (e) { say("update failed: " + e.message); })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var tail = document.getElementById("live-tail");
  var url = stream;
  if (tail) {
    url += (url.indexOf("?") < 0 ? "?" : "&") + "attempt=" + encodeURIComponent(tail.getAttribute("data-attempt") || "") + "&offset=" + encodeURIComponent(tail.getAttribute("data-offset") || "0");
  }
  function onHead(data) {
    var d = JSON.parse(data);
    if (String(d.seq) !== body.getAttribute("data-seq")) refresh();
  }
  function onTail(data) {
    var t = document.getElementById("live-tail");
    if (!t) return;
    var d = JSON.parse(data);
    var note = document.getElementById("live-note");
    if (d.ended) { if (note) note.textContent = "The attempt ended."; return; }
    var atEnd = t.scrollTop + t.clientHeight >= t.scrollHeight - 4;
    if (d.reset) t.textContent = "";
    t.setAttribute("data-attempt", d.attempt);
    var cap = Number(t.getAttribute("data-cap")) || 65536;
    var text = t.textContent + d.text;
    t.textContent = text.length > cap ? text.slice(text.length - cap) : text;
    if (note) note.textContent = "";
    if (atEnd) t.scrollTop = t.scrollHeight;
  }
  var polling = null;
  function poll(on) {
    body.setAttribute("data-live", on ? "polling" : "stream");
    if (on && !polling) polling = setInterval(function () { if (document.visibilityState === "visible") refresh(); }, 5000);
    if (!on && polling) { clearInterval(polling); polling = null; }
  }
  var worker = null;
  try { if (window.SharedWorker) worker = new SharedWorker(body.getAttribute("data-worker") || "/assets/stream.js", { name: "loop-serve-streams" }); } catch (e) { worker = null; }
  if (worker) {
    var port = worker.port;
    port.onmessage = function (m) {
      var d = m.data || {};
      if (d.type === "open") { poll(false); say("live · seq " + body.getAttribute("data-seq")); }
      else if (d.type === "error") say("reconnecting…");
      else if (d.type === "head") onHead(d.data);
      else if (d.type === "tail") onTail(d.data);
      else if (d.type === "full") { poll(true); say("polling every 5 s (" + d.max + " live streams are open in this browser)"); }
    };
    port.start();
    port.postMessage({ subscribe: url });
    // The worker cannot see a tab close: a tab says it is alive, and asks again for a stream while it polls.
    setInterval(function () { port.postMessage(polling ? { subscribe: url } : { alive: url }); }, 5000);
    window.addEventListener("pagehide", function () { port.postMessage({ leave: url }); });
  } else {
    var es = new EventSource(url, { withCredentials: true });
    body.setAttribute("data-live", "stream");
    es.onopen = function () { say("live · seq " + body.getAttribute("data-seq")); };
    es.onerror = function () { say("reconnecting…"); };
    es.addEventListener("head", function (ev) { onHead(ev.data); });
    es.addEventListener("tail", function (ev) { onTail(ev.data); });
  }
  // Running bars grow with time, not only with events.
  setInterval(function () { if (document.visibilityState === "visible") refresh(); }, 30000);
})();
// The page's actions (a server without --read-only): each form posts its verb as JSON with the page's
// CSRF token, and says what was done or why it was refused; the live stream then redraws the page.
(function () {
  var meta = document.querySelector('meta[name="loop-csrf"]');
  var out = document.getElementById("act-result");
  if (!meta || !out || !window.fetch) return;
  document.addEventListener("submit", function (ev) {
    var f = ev.target;
    if (!f || !f.classList || !f.classList.contains("act")) return;
    ev.preventDefault();
    var body = { verb: f.getAttribute("data-verb"), csrf: meta.getAttribute("content") };
    var item = f.getAttribute("data-item");
    if (item !== null) body.item = item;
    ["text", "confirm"].forEach(function (k) { var i = f.elements.namedItem(k); if (i && i.value !== "") body[k] = i.value; });
    var button = f.querySelector("button");
    if (button) button.disabled = true;
    out.removeAttribute("data-ok");
    out.textContent = body.verb + "…";
    fetch(f.getAttribute("data-action"), { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(body) })
      .then(function (r) { return r.json().then(function (d) { return { ok: r.ok, d: d }; }); })
      .then(function (x) {
        out.setAttribute("data-ok", x.ok ? "1" : "0");
        if (!x.ok) { out.textContent = body.verb + " refused: " + ((x.d.error && x.d.error.message) || "no reason given"); return; }
        var done = (x.d.actions || []).map(function (a) { return (a.noop ? "no-op: " : "") + a.effect; });
        out.textContent = body.verb + ": " + (done.join("; ") || "done");
      })
      .catch(function (e) { out.setAttribute("data-ok", "0"); out.textContent = body.verb + " failed: " + e.message; })
      .then(function () { if (button) button.disabled = false; });
  });
})();
`;

/** How many streams one browser holds at most: two of its six connections to a host stay free for pages. */
const MAX_STREAMS = 4;

/**
 * The SharedWorker every tab of one browser shares: one EventSource per distinct stream address, its
 * events handed to each tab that asked for it. A tab that stops saying it is alive for 20 s is gone
 * (a port has no close event), and a stream no tab wants is closed.
 */
export const WORKER_JS = `"use strict";
var MAX = ${MAX_STREAMS};
var streams = {};
function count() { var n = 0; for (var k in streams) n++; return n; }
function send(s, msg) { s.ports.forEach(function (p) { p.postMessage(msg); }); }
function drop(url, port) {
  var s = streams[url];
  if (!s) return;
  s.ports = s.ports.filter(function (p) { return p !== port; });
  if (s.ports.length === 0) { s.es.close(); delete streams[url]; }
}
function join(url, port) {
  var s = streams[url];
  if (!s) {
    if (count() >= MAX) { port.postMessage({ type: "full", max: MAX }); return; }
    var es = new EventSource(url, { withCredentials: true });
    s = streams[url] = { es: es, ports: [], seen: new Map(), open: false };
    es.onopen = function () { s.open = true; send(s, { type: "open" }); };
    es.onerror = function () { s.open = false; send(s, { type: "error" }); };
    es.addEventListener("head", function (ev) { send(s, { type: "head", data: ev.data }); });
    es.addEventListener("tail", function (ev) { send(s, { type: "tail", data: ev.data }); });
  }
  if (s.ports.indexOf(port) < 0) s.ports.push(port);
  s.seen.set(port, Date.now());
  if (s.open) port.postMessage({ type: "open" });
}
onconnect = function (c) {
  var port = c.ports[0];
  port.onmessage = function (m) {
    var d = m.data || {};
    if (typeof d.subscribe === "string") join(d.subscribe, port);
    else if (typeof d.alive === "string" && streams[d.alive]) streams[d.alive].seen.set(port, Date.now());
    else if (typeof d.leave === "string") drop(d.leave, port);
  };
  port.start();
};
setInterval(function () {
  var now = Date.now();
  for (var url in streams) {
    var s = streams[url];
    s.ports.slice().forEach(function (p) { if (now - (s.seen.get(p) || 0) > 20000) { s.seen.delete(p); drop(url, p); } });
  }
}, 5000);
`;
