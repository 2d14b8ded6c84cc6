// The lambdaclaw web console. It talks to the server only through the
// public API: the JSON endpoints under /v1/lambdaclaw/, /metrics, and the
// WebSocket /ws for chat. The API key is kept in sessionStorage (this tab
// only) and sent in the Authorization header, or as a WebSocket
// subprotocol, never in a URL. Everything shown is set as text, never as
// HTML.
"use strict";

// BASE is where the console is served: "/" locally, "/<stage>/" behind
// API Gateway; every path of the API is relative to it.
const BASE = new URL(".", location.href).pathname;
const API = BASE + "v1/lambdaclaw";
const USER = "console"; // the WebSocket user of the console's chats
const $ = (id) => document.getElementById(id);

const state = {
  key: sessionStorage.getItem("lambdaclaw.key") || "",
  me: null,
  view: "chat",
  ws: null,
  wsReady: null,
  bubbles: {}, // run id -> the assistant bubble it streams into
  metricsTimer: 0,
};

// el makes an element with attributes, event handlers (on*) and children
// (strings become text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== false && v != null) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c != null) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function showError(err) {
  $("error").textContent = err ? String(err.message || err) : "";
}

function when(t) {
  return t ? new Date(t).toLocaleString() : "";
}

// api calls the console's API (or, for a path starting with /, another
// path of the server, relative to BASE) and returns
// the decoded JSON, or null for an empty answer.
async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + state.key } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path.startsWith("/") ? BASE + path.slice(1) : API + "/" + path, opts);
  if (resp.status === 401) {
    signOut("The key was refused: it is unknown or revoked.");
    throw new Error("signed out");
  }
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok) {
    throw new Error((data && data.error && data.error.message) || resp.status + " " + resp.statusText);
  }
  return data === null ? text : data;
}

function randomID() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// ---- signing in ----

async function signIn(key) {
  state.key = key;
  try {
    state.me = await api("GET", "me");
  } catch (err) {
    state.key = "";
    $("signin-error").textContent = err.message === "signed out" ? $("signin-error").textContent : err.message;
    return;
  }
  sessionStorage.setItem("lambdaclaw.key", key);
  $("signin").hidden = true;
  $("nav").hidden = false;
  $("signout").hidden = false;
  $("nav-keys").hidden = !state.me.admin;
  $("nav-metrics").hidden = !state.me.features.metrics;
  $("who").textContent = (state.me.name || state.me.id) + " · " + state.me.prefix + "… · " + state.me.autonomy + (state.me.admin ? " · admin" : "");
  for (const sel of [$("chat-agent"), $("agent-select")]) {
    sel.replaceChildren(...state.me.agents.map((a) => el("option", { value: a }, a)));
  }
  show("chat");
  refreshApprovalCount();
}

function signOut(msg) {
  sessionStorage.removeItem("lambdaclaw.key");
  sessionStorage.removeItem("lambdaclaw.sessions");
  state.key = "";
  state.me = null;
  if (state.ws) state.ws.close();
  state.ws = null;
  clearInterval(state.metricsTimer);
  for (const v of document.querySelectorAll(".view")) v.hidden = true;
  $("nav").hidden = true;
  $("signout").hidden = true;
  $("who").textContent = "";
  $("signin").hidden = false;
  $("signin-key").value = "";
  $("signin-error").textContent = msg || "";
}

// ---- views ----

const loaders = {
  chat: loadChat,
  sessions: loadSessions,
  approvals: loadApprovals,
  jobs: loadJobs,
  agents: loadAgent,
  keys: loadKeys,
  metrics: loadMetrics,
};

function show(view) {
  state.view = view;
  showError("");
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== "view-" + view;
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("active", b.dataset.view === view);
  clearInterval(state.metricsTimer);
  loaders[view]().catch(showError);
}

// ---- chat ----

function chatSessions() {
  return JSON.parse(sessionStorage.getItem("lambdaclaw.sessions") || "{}");
}

function rememberSession(agent, id) {
  const s = chatSessions();
  s[agent] = id;
  sessionStorage.setItem("lambdaclaw.sessions", JSON.stringify(s));
}

// connect opens the WebSocket, the key offered as a subprotocol.
function connect() {
  if (state.ws && state.ws.readyState <= WebSocket.OPEN) return state.wsReady;
  const url = state.me.websocket || (location.protocol === "https:" ? "wss://" : "ws://") + location.host + BASE + "ws";
  const ws = new WebSocket(url, ["lambdaclaw", "lambdaclaw.key." + state.key]);
  state.ws = ws;
  $("chat-status").textContent = "connecting…";
  state.wsReady = new Promise((resolve, reject) => {
    ws.onopen = () => { $("chat-status").textContent = "connected"; resolve(ws); };
    ws.onerror = () => reject(new Error("the chat connection failed"));
  });
  ws.onclose = (ev) => {
    $("chat-status").textContent = "disconnected" + (ev.reason ? ": " + ev.reason : "");
    if (state.ws === ws) state.ws = null;
  };
  ws.onmessage = (ev) => {
    try { onFrame(JSON.parse(ev.data)); } catch (err) { showError(err); }
  };
  return state.wsReady;
}

async function send(frame) {
  const ws = await connect();
  ws.send(JSON.stringify(frame));
}

function chatAgent() {
  return $("chat-agent").value;
}

function addMessage(role, text) {
  const m = el("div", { class: "msg " + role }, text);
  $("chat-log").append(m);
  $("chat-log").scrollTop = $("chat-log").scrollHeight;
  return m;
}

function bubble(runID) {
  if (!state.bubbles[runID]) state.bubbles[runID] = addMessage("assistant", "");
  return state.bubbles[runID];
}

function onFrame(f) {
  switch (f.type) {
    case "ack":
      if (f.session_id) rememberSession(chatAgent(), f.session_id);
      break;
    case "delta":
      bubble(f.run_id).textContent += f.text;
      $("chat-log").scrollTop = $("chat-log").scrollHeight;
      break;
    case "final":
      bubble(f.run_id).textContent = f.text;
      if (f.usage) bubble(f.run_id).title = f.usage.total_tokens + " tokens";
      delete state.bubbles[f.run_id];
      refreshApprovalCount();
      break;
    case "approval":
      addApproval(f);
      refreshApprovalCount();
      break;
    case "error":
      addMessage("error", (f.code ? f.code + ": " : "") + f.message);
      if (f.run_id) delete state.bubbles[f.run_id];
      break;
  }
}

// addApproval shows an approval inline, answered with /yes, /no or
// /always in the same session.
function addApproval(f) {
  const box = el("div", { class: "approval", "data-approval": f.approval_id },
    el("strong", {}, "Approval needed: " + (f.tools || []).join(", ")),
    el("div", { class: "prompt" }, f.prompt || ""));
  const answer = (word) => async () => {
    box.querySelector(".actions").replaceChildren(el("em", {}, "answered " + word));
    await sendMessage(word);
  };
  box.append(el("div", { class: "actions" },
    el("button", { class: "primary", onclick: answer("/yes") }, "Approve"),
    el("button", { onclick: answer("/always") }, "Always"),
    el("button", { onclick: answer("/no") }, "Deny")));
  $("chat-log").append(box);
  $("chat-log").scrollTop = $("chat-log").scrollHeight;
}

async function sendMessage(text, agent) {
  agent = agent || chatAgent();
  addMessage("user", text);
  await send({ type: "message", id: randomID(), agent, user: USER, text });
}

async function loadChat() {
  const id = chatSessions()[chatAgent()];
  $("chat-log").replaceChildren();
  state.bubbles = {};
  connect().catch(showError);
  if (!id) return;
  try {
    const data = await api("GET", "sessions/" + encodeURIComponent(id));
    renderHistory($("chat-log"), data.messages);
    if (data.session.pending_approval) {
      const a = data.session.pending_approval;
      addApproval({ approval_id: a.id, tools: a.tools, prompt: a.prompt });
    }
  } catch {
    // A session that was reset or expired starts afresh.
  }
}

function renderHistory(into, messages) {
  for (const m of messages) {
    let text = m.content || "";
    if (m.tool_calls && m.tool_calls.length) text += (text ? "\n" : "") + "→ " + m.tool_calls.map((c) => c.name).join(", ");
    if (m.role === "tool") text = (m.name || "tool") + ": " + text;
    if (!text) continue;
    const div = el("div", { class: "msg " + m.role }, text);
    into.append(div);
  }
  into.scrollTop = into.scrollHeight;
}

// ---- sessions and approvals ----

async function loadSessions() {
  const data = await api("GET", "sessions");
  $("session-detail").replaceChildren();
  $("sessions-table").tBodies[0].replaceChildren(...data.sessions.map((s) =>
    el("tr", { class: "clickable", onclick: () => openSession(s.id).catch(showError) },
      el("td", {}, s.agent), el("td", {}, el("code", {}, s.id.slice(0, 16))), el("td", {}, when(s.updated_at)),
      el("td", {}, s.pending_approval ? s.pending_approval.tools.join(", ") : ""))));
  if (!data.sessions.length) $("session-detail").append(el("p", { class: "muted" }, "No sessions yet."));
}

async function openSession(id) {
  const data = await api("GET", "sessions/" + encodeURIComponent(id));
  const log = el("div", { id: "session-log" });
  $("session-detail").replaceChildren(
    el("h3", {}, data.session.agent + " · " + id.slice(0, 16) + (data.truncated ? " (latest messages)" : "")), log);
  renderHistory(log, data.messages);
}

async function refreshApprovalCount() {
  try {
    const data = await api("GET", "approvals");
    $("approval-count").textContent = data.approvals.length;
    $("approval-count").hidden = data.approvals.length === 0;
  } catch {
    // The count is a hint; the view says what failed.
  }
}

async function loadApprovals() {
  const data = await api("GET", "approvals");
  const mine = chatSessions();
  $("approval-count").textContent = data.approvals.length;
  $("approval-count").hidden = data.approvals.length === 0;
  $("approvals-list").replaceChildren(...data.approvals.map((a) => {
    const box = el("div", { class: "approval" },
      el("strong", {}, a.agent + ": " + a.tools.join(", ")), el("div", { class: "prompt" }, a.prompt), el("div", { class: "muted" }, when(a.created_at)));
    if (mine[a.agent] === a.session_id) {
      const answer = (word) => async () => {
        $("chat-agent").value = a.agent;
        show("chat");
        await sendMessage(word, a.agent);
      };
      box.append(el("div", { class: "actions" },
        el("button", { class: "primary", onclick: answer("/yes") }, "Approve"),
        el("button", { onclick: answer("/no") }, "Deny")));
    } else {
      box.append(el("div", { class: "muted" }, "Asked in another channel: answer it there."));
    }
    return box;
  }));
  if (!data.approvals.length) $("approvals-list").append(el("p", { class: "muted" }, "Nothing waits for an answer."));
}

// ---- jobs ----

function scheduleText(s) {
  if (s.cron) return "cron " + s.cron + (s.tz ? " " + s.tz : "");
  if (s.every) return "every " + s.every;
  if (s.at) return "at " + when(s.at);
  return "";
}

// loadJobs shows the first page of the key's jobs; "More" adds the next
// (the API answers a page at a time, next_cursor naming the one after).
async function loadJobs() {
  $("job-runs").replaceChildren();
  $("jobs-table").tBodies[0].replaceChildren();
  const shown = await moreJobs("");
  if (!shown) $("job-runs").append(el("p", { class: "muted" }, "No scheduled jobs. Ask an agent to remind you of something, or use `lambdaclaw cron add`."));
}

// moreJobs appends the page of jobs after cursor and returns how many it
// added.
async function moreJobs(cursor) {
  const data = await api("GET", "jobs" + (cursor ? "?cursor=" + encodeURIComponent(cursor) : ""));
  $("jobs-table").tBodies[0].append(...data.jobs.map((j) => el("tr", {},
    el("td", {}, j.name || j.id), el("td", {}, j.agent), el("td", {}, scheduleText(j.schedule)),
    el("td", {}, when(j.next)), el("td", {}, j.paused ? "paused" : "active"),
    el("td", {},
      el("button", { onclick: () => jobRuns(j).catch(showError) }, "Runs"), " ",
      el("button", { onclick: () => api("POST", "jobs/" + encodeURIComponent(j.id), { paused: !j.paused }).then(loadJobs).catch(showError) }, j.paused ? "Resume" : "Pause"), " ",
      el("button", { onclick: () => confirm("Delete job " + (j.name || j.id) + "?") && api("DELETE", "jobs/" + encodeURIComponent(j.id)).then(loadJobs).catch(showError) }, "Delete")))));
  const more = $("jobs-more");
  more.hidden = !data.next_cursor;
  more.onclick = data.next_cursor ? () => moreJobs(data.next_cursor).catch(showError) : null;
  return data.jobs.length;
}

async function jobRuns(j) {
  const data = await api("GET", "jobs/" + encodeURIComponent(j.id) + "/runs");
  $("job-runs").replaceChildren(el("h3", {}, "Runs of " + (j.name || j.id)),
    data.runs.length ? el("table", {}, el("tbody", {}, data.runs.map((r) => el("tr", {},
      el("td", {}, when(r.at)), el("td", {}, r.status + (r.manual ? " (manual)" : "")), el("td", {}, r.reason || r.reply || ""))))) :
      el("p", { class: "muted" }, "It has not run yet."));
}

// ---- agents: files, skills, memory ----

function agentPath(...parts) {
  return "agents/" + parts.map((p) => p.split("/").map(encodeURIComponent).join("/")).join("/");
}

async function loadAgent() {
  const agent = $("agent-select").value;
  $("file-title").textContent = "File";
  $("file-view").textContent = "";
  $("memory-hits").replaceChildren();
  $("memory-method").textContent = "";
  $("memory-form").hidden = !state.me.features.memory;
  if (!agent) return;
  const data = await api("GET", agentPath(agent));
  const fileItem = (p) => el("li", { onclick: () => openFile(agent, p).catch(showError) }, p);
  $("agent-bootstrap").replaceChildren(...data.bootstrap.map(fileItem));
  $("agent-files").replaceChildren(...data.files.map((f) => fileItem(f.path)));
  if (data.truncated) $("agent-files").append(el("li", { class: "muted" }, "…"));
  $("agent-skills").replaceChildren(...data.skills.map((s) => el("li", {}, el("strong", {}, s.name), " (" + s.source + ") ", s.description)));
}

async function openFile(agent, p) {
  const data = await api("GET", agentPath(agent, "files", p));
  $("file-title").textContent = p + (data.truncated ? " (beginning)" : "");
  $("file-view").textContent = data.text;
}

async function searchMemory() {
  const agent = $("agent-select").value;
  const q = $("memory-query").value.trim();
  if (!q) return;
  const data = await api("GET", agentPath(agent, "memory") + "?q=" + encodeURIComponent(q));
  $("memory-method").textContent = data.hits.length + " found (" + data.method + ")";
  $("memory-hits").replaceChildren(...data.hits.map((h) => {
    const e = h.entry;
    const own = e.owner === state.me.owner;
    return el("li", { "data-key": e.key },
      el("strong", {}, e.key), " ", el("span", { class: "muted" }, own ? "yours" : "agent-wide"), " — ", h.snippet, " ",
      el("button", { onclick: () => viewMemory(agent, e.key).catch(showError) }, "View"), " ",
      own ? el("button", { onclick: () => forgetMemory(agent, e.key).catch(showError) }, "Forget") : null);
  }));
}

async function viewMemory(agent, key) {
  const e = await api("GET", agentPath(agent, "memory", key));
  $("file-title").textContent = "Memory " + key + " (" + e.category + (e.source ? ", " + e.source : "") + ")";
  $("file-view").textContent = e.text;
}

async function forgetMemory(agent, key) {
  if (!confirm("Forget " + key + "?")) return;
  await api("DELETE", agentPath(agent, "memory", key));
  await searchMemory();
}

// ---- keys ----

async function loadKeys() {
  const data = await api("GET", "keys");
  $("keys-table").tBodies[0].replaceChildren(...data.keys.map((k) => el("tr", { "data-key-id": k.id },
    el("td", {}, el("code", {}, k.id)), el("td", {}, k.name), el("td", {}, k.prefix + "…"),
    el("td", {}, k.autonomy + (k.admin ? ", admin" : "")), el("td", {}, k.agents.length ? k.agents.join(", ") : "all"),
    el("td", {}, k.revoked_at ? "revoked " + when(k.revoked_at) : "active"),
    el("td", {}, k.revoked_at || k.id === state.me.id ? "" :
      el("button", { onclick: () => confirm("Revoke " + (k.name || k.id) + "?") && api("DELETE", "keys/" + encodeURIComponent(k.id)).then(loadKeys).catch(showError) }, "Revoke")))));
}

async function createKey() {
  const data = await api("POST", "keys", { name: $("key-name").value, autonomy: $("key-autonomy").value, admin: $("key-admin").checked });
  $("key-secret").hidden = false;
  $("key-secret").textContent = "New key (shown once, copy it now): " + data.key;
  $("key-name").value = "";
  $("key-admin").checked = false;
  await loadKeys();
}

// ---- metrics ----

// parseMetrics reads Prometheus's text format into {name: [{labels, value}]}.
function parseMetrics(text) {
  const out = {};
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    (out[m[1]] = out[m[1]] || []).push({ labels, value: Number(m[3]) });
  }
  return out;
}

function sum(samples, filter) {
  return (samples || []).filter((s) => !filter || Object.entries(filter).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}

async function loadMetrics() {
  const refresh = async () => {
    const m = parseMetrics(await api("GET", "/metrics"));
    const mean = (name) => {
      const n = sum(m[name + "_count"]);
      return n ? (sum(m[name + "_sum"]) / n).toFixed(2) + " s" : "–";
    };
    const cards = [
      ["Turns", sum(m.lambdaclaw_turns_total)],
      ["Turns failed", sum(m.lambdaclaw_turns_total, { outcome: "error" })],
      ["Tokens in", sum(m.lambdaclaw_tokens_total, { direction: "in" })],
      ["Tokens out", sum(m.lambdaclaw_tokens_total, { direction: "out" })],
      ["Errors", sum(m.lambdaclaw_errors_total)],
      ["Tool calls", sum(m.lambdaclaw_tool_calls_total)],
      ["Approval waits", sum(m.lambdaclaw_approval_waits_total)],
      ["Mean turn time", mean("lambdaclaw_turn_seconds")],
      ["Mean model call", mean("lambdaclaw_llm_seconds")],
    ];
    $("metrics-cards").replaceChildren(...cards.map(([label, value]) =>
      el("div", { class: "card", "data-metric": label }, el("div", { class: "value" }, value), el("div", { class: "label" }, label))));
  };
  await refresh();
  state.metricsTimer = setInterval(() => refresh().catch(showError), 5000);
}

// ---- wiring ----

document.addEventListener("DOMContentLoaded", () => {
  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    $("signin-error").textContent = "";
    signIn($("signin-key").value.trim());
  });
  $("signout").addEventListener("click", () => signOut(""));
  for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => show(b.dataset.view));
  $("chat-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("chat-input").value.trim();
    if (!text) return;
    $("chat-input").value = "";
    sendMessage(text).catch(showError);
  });
  $("chat-input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      $("chat-form").requestSubmit();
    }
  });
  $("chat-agent").addEventListener("change", () => loadChat().catch(showError));
  $("chat-reset").addEventListener("click", () => {
    send({ type: "reset", id: randomID(), agent: chatAgent(), user: USER }).catch(showError);
    $("chat-log").replaceChildren(el("div", { class: "msg system" }, "New conversation."));
  });
  $("agent-select").addEventListener("change", () => loadAgent().catch(showError));
  $("memory-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    searchMemory().catch(showError);
  });
  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    createKey().catch(showError);
  });
  if (state.key) signIn(state.key);
});
