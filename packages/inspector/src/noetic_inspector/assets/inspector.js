// The Noetic inspector's page script (shipped with the package, no build step, no CDN).
// Every piece of data is put into the page with textContent / createTextNode / SVG
// attributes, never innerHTML, so model, tool and user text always stays text.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

// --- DOM helpers --------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "style") Object.assign(node.style, value); // CSSOM: allowed by the CSP
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function show(...nodes) {
  const main = document.getElementById("main");
  main.replaceChildren(...nodes);
}

async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error((body.error && body.error.code + ": " + body.error.message) || response.statusText);
  return body;
}

function failed(error) {
  show(el("p", { class: "error" }, String(error.message || error)));
}

// --- formatting ---------------------------------------------------------------------------

function usd(text) {
  const value = Number(text || 0);
  return "$" + (value === 0 ? "0" : value < 0.01 ? value.toPrecision(3) : value.toFixed(4));
}

function when(text) {
  return text ? new Date(text).toLocaleString() : "—";
}

function badge(status) {
  return el("span", { class: "badge " + status }, status);
}

function table(headers, rows, numeric) {
  const head = el("tr", {}, ...headers.map((h) => el("th", {}, h)));
  const body = rows.map((cells) => el("tr", {}, ...cells.map((cell, i) => el("td", numeric && numeric.includes(i) ? { class: "num" } : {}, cell))));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
}

// --- the execution list (/) ---------------------------------------------------------------

async function listPage() {
  const data = await getJSON("/api/executions");
  if (!data.executions.length) {
    show(el("h1", {}, "Executions"), el("p", { class: "muted" }, "This store holds no executions yet."));
    return;
  }
  const rows = data.executions.map((x) => [
    el("a", { href: "/executions/" + encodeURIComponent(x.execution_id), class: "execution-link" }, x.execution_id),
    x.thread_id,
    x.status === "damaged" ? el("span", {}, badge(x.status), " ", el("span", { class: "muted" }, x.reason)) : badge(x.status),
    String(x.steps),
    String(x.totals.input_tokens + x.totals.output_tokens),
    usd(x.totals.cost),
    usd(x.totals.billed_cost),
    usd(x.totals.held_cost),
    when(x.started_at),
    when(x.ended_at),
  ]);
  show(
    el("h1", {}, "Executions"),
    table(["Execution", "Thread", "Status", "Steps", "Tokens", "Cost", "Billed", "Held", "Started", "Ended"], rows, [3, 4, 5, 6, 7]),
  );
}

// --- one execution (/executions/{id}) -----------------------------------------------------

function stepTable(steps) {
  const rows = steps.map((s) => [
    el("span", { style: { paddingLeft: Math.max(0, s.depth - 1) * 18 + "px" } }, s.step_id),
    s.kind,
    s.duration_ms.toFixed(1) + " ms",
    usd(s.cost),
    usd(s.billed_cost),
    String(s.usage[0] + s.usage[1]),
    s.replayed ? badge("replayed") : "ran",
  ]);
  return table(["Step", "Kind", "Duration", "Cost", "Billed", "Tokens", "Replayed"], rows, [2, 3, 4, 5]);
}

function contentText(parts) {
  return (parts || []).map((p) => p.text || p.refusal || "").join("");
}

const ITEM_KEYS = new Set(["id", "type", "status"]);

function itemView(item) {
  let kind = item.type;
  let head = item.type;
  let body;
  if (item.type === "message") {
    head = item.role;
    body = el("pre", {}, contentText(item.content));
  } else if (item.type === "function_call") {
    head = "tool call " + item.name + " (" + item.call_id + ")";
    body = el("pre", {}, item.arguments);
  } else if (item.type === "function_call_output") {
    head = "tool output (" + item.call_id + ")";
    body = el("pre", {}, item.output);
  } else if (item.type === "reasoning") {
    body = el("pre", {}, contentText(item.summary) || contentText(item.content) || "(encrypted)");
  } else {
    kind = "custom";
    const fields = Object.entries(item).filter(([key]) => !ITEM_KEYS.has(key));
    body = el("table", { class: "fields" }, el("tbody", {}, ...fields.map(([key, value]) => el("tr", {}, el("td", {}, key), el("td", {}, el("pre", {}, JSON.stringify(value, null, 2)))))));
  }
  return el("div", { class: "item " + kind }, el("div", { class: "head" }, head), body);
}

const COLOURS = { system: "#6b7385", tools: "#b7791f", history: "#2c6fd1" };
const LAYER_COLOURS = ["#1f8a4c", "#7b5ea7", "#c0392b", "#16a2b8", "#d35400", "#8e44ad"];

// One horizontal stacked bar per model round: system prompt, tools, each layer (pinned
// layers drawn darker with a dashed outline), history; the epoch and re-anchor reason beside.
function layerChart(rounds) {
  const width = 1100, bar = 22, gap = 30, left = 140, right = 320;
  const max = Math.max(1, ...rounds.map((r) => r.usage.total_used_tokens || 0));
  const scale = (width - left - right) / max;
  const chart = svg("svg", { width, height: rounds.length * gap + 20, class: "layer-chart", role: "img", "aria-label": "context window by layer per model round" });
  const legend = new Map();
  rounds.forEach((round, i) => {
    const u = round.usage;
    const y = 10 + i * gap;
    chart.append(svg("text", { x: 0, y: y + 15, "font-size": 12 }, round.step_id + " #" + (i + 1)));
    const segments = [["system prompt", u.system_prompt_tokens, COLOURS.system, false], ["tools", u.tools_tokens, COLOURS.tools, false]];
    (u.layers || []).forEach((layer, j) => segments.push(["layer " + layer.layer_id + " (" + layer.placement + ", " + layer.served + ")", layer.token_count, LAYER_COLOURS[j % LAYER_COLOURS.length], layer.served === "pinned"]));
    segments.push(["history", u.history_tokens, COLOURS.history, false]);
    let x = left;
    for (const [name, tokens, colour, pinned] of segments) {
      if (!tokens) continue;
      const w = Math.max(1, tokens * scale);
      const rect = svg("rect", { x, y, width: w, height: bar, fill: colour, "fill-opacity": pinned ? 1 : 0.75, stroke: pinned ? "#000" : "#fff", "stroke-dasharray": pinned ? "3 2" : "", class: "segment" });
      rect.append(svg("title", {}, name + ": " + tokens + " tokens"));
      chart.append(rect);
      x += w;
      legend.set(name.replace(/ \(.*/, ""), colour);
    }
    const epoch = u.epoch ? " · epoch " + u.epoch.id + " age " + u.epoch.age + (u.epoch.reanchor_reason ? " · re-anchored: " + u.epoch.reanchor_reason : "") : "";
    chart.append(svg("text", { x: x + 6, y: y + 15, "font-size": 11, fill: "#6b7385" }, u.total_used_tokens + " tokens" + epoch));
  });
  const keys = el("div", { class: "legend" }, ...[...legend].map(([name, colour]) => el("span", {}, el("i", { style: { background: colour } }), name)), el("span", {}, "dashed outline: pinned"));
  return el("div", { class: "chart" }, chart, keys);
}

async function executionPage() {
  const id = decodeURIComponent(location.pathname.slice("/executions/".length));
  const data = await getJSON("/api/executions/" + encodeURIComponent(id));
  const s = data.summary;
  document.title = "Execution · Noetic inspector";
  const facts = el(
    "div",
    { class: "facts" },
    el("div", {}, el("span", {}, "status"), badge(s.status)),
    s.reason ? el("div", { class: "reason" }, el("span", {}, "reason"), s.reason) : null,
    el("div", {}, el("span", {}, "thread"), s.thread_id),
    el("div", {}, el("span", {}, "attempt"), String(s.attempt)),
    el("div", {}, el("span", {}, "cost"), usd(s.totals.cost)),
    el("div", {}, el("span", {}, "billed"), usd(s.totals.billed_cost)),
    el("div", {}, el("span", {}, "held"), usd(s.totals.held_cost)),
    el("div", {}, el("span", {}, "tokens"), String(s.totals.input_tokens + s.totals.output_tokens)),
    el("div", {}, el("span", {}, "started"), when(s.started_at)),
    el("div", {}, el("span", {}, "ended"), when(s.ended_at)),
  );
  const rounds = data.steps.filter((step) => step.layer_usage).map((step) => ({ step_id: step.step_id, usage: step.layer_usage }));
  show(
    el("h1", {}, s.execution_id),
    facts,
    data.has_workflow ? el("p", {}, el("a", { href: "/workflow" }, "Workflow graph")) : null,
    el("h2", {}, "Steps"),
    data.steps.length ? stepTable(data.steps) : el("p", { class: "muted" }, "No completed step recorded."),
    el("h2", {}, "Context window by layer, per model round"),
    rounds.length ? layerChart(rounds) : el("p", { class: "muted" }, "No model round recorded."),
    el("h2", {}, "Items"),
    el("div", { class: "items" }, ...data.items.map(itemView)),
    data.workflow ? el("h2", {}, "Workflow it ran") : null,
    data.workflow ? workflowGraph(data.workflow) : null,
    data.workflow_error ? el("p", { class: "error" }, "The recorded workflow cannot be drawn: " + data.workflow_error) : null,
  );
}

// --- the workflow graph (/workflow) -------------------------------------------------------

function workflowGraph(graph) {
  const boxW = 190, boxH = 40, colW = 220, rowH = 56;
  const at = new Map(graph.nodes.map((n) => [n.path, n]));
  const width = Math.max(...graph.nodes.map((n) => n.column)) * colW + boxW + 60;
  const height = graph.nodes.length * rowH + 20;
  const drawing = svg("svg", { width, height, class: "workflow-graph", role: "img", "aria-label": "workflow control-flow graph" });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6b7385" }));
  defs.append(marker);
  drawing.append(defs);
  const pos = (n) => ({ x: 20 + n.column * colW, y: 10 + n.row * rowH });
  for (const edge of graph.edges) {
    const a = pos(at.get(edge.from)), b = pos(at.get(edge.to));
    let d;
    if (edge.kind === "next") d = `M${a.x + 20},${a.y + boxH} V${b.y}`;
    else if (edge.kind === "repeat") d = `M${a.x + boxW},${a.y + boxH / 2} C${a.x + boxW + 40},${a.y} ${b.x + boxW + 40},${b.y + boxH} ${b.x + boxW},${b.y + boxH / 2}`;
    else d = `M${a.x + 10},${a.y + boxH} V${b.y + boxH / 2} H${b.x}`;
    drawing.append(svg("path", { d, fill: "none", stroke: edge.kind === "repeat" ? "#c0392b" : "#6b7385", "stroke-dasharray": edge.kind === "route" ? "4 3" : "", "marker-end": "url(#arrow)", class: "edge " + edge.kind }));
  }
  for (const node of graph.nodes) {
    const { x, y } = pos(node);
    drawing.append(svg("rect", { x, y, width: boxW, height: boxH, rx: 6, fill: "#fff", stroke: "#2c6fd1", class: "node" }));
    drawing.append(svg("text", { x: x + 8, y: y + 16, "font-size": 12, "font-weight": 600 }, node.kind + " · " + node.id));
    drawing.append(svg("text", { x: x + 8, y: y + 32, "font-size": 11, fill: "#6b7385" }, node.detail));
  }
  return el("div", { class: "graph" }, drawing);
}

async function workflowPage() {
  const graph = await getJSON("/api/workflow");
  show(el("h1", {}, "Workflow"), el("p", { class: "muted" }, "Arrows: contains (solid), next step (solid, down), loop repeats (red), routes (dashed)."), workflowGraph(graph));
}

// --- live events (/live) ------------------------------------------------------------------

function livePage() {
  const list = el("tbody", {});
  const status = el("p", { class: "muted" }, "Waiting for a harness started with inspect= or NOETIC_INSPECT…");
  show(el("h1", {}, "Live"), status, el("div", { class: "events" }, el("table", { class: "live-events" }, el("thead", {}, el("tr", {}, el("th", {}, "Event"), el("th", {}, "Data"))), list)));
  const source = new EventSource("/api/live/events");
  let count = 0;
  source.onmessage = (message) => {
    const event = JSON.parse(message.data);
    count += 1;
    status.textContent = count + " events received";
    const data = event.data && event.data.item ? event.data.item : event.data;
    list.prepend(el("tr", { class: "live-event" }, el("td", {}, String(event.type)), el("td", {}, el("pre", {}, JSON.stringify(data)))));
    while (list.children.length > 2000) list.lastChild.remove();
  };
}

// --- routing ------------------------------------------------------------------------------

const PAGES = { index: listPage, execution: executionPage, workflow: workflowPage, live: livePage };

document.addEventListener("DOMContentLoaded", () => {
  const page = PAGES[document.body.dataset.page];
  Promise.resolve()
    .then(page)
    .then(() => document.body.setAttribute("data-ready", "true"))
    .catch(failed);
});
