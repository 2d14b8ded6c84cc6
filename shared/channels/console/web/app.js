// The lambdaclaw web console. It talks to the server only through the
// public API: the JSON endpoints under /v1/lambdaclaw/, /metrics, and the
// WebSocket /ws for chat. The API key is kept in sessionStorage (this tab
// only) and sent in the Authorization header, or as a WebSocket
// subprotocol, never in a URL. Everything shown is set as text, never as
// HTML: replies are markdown, which renderMarkdown turns into elements
// whose text is set as text.
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
  editable: false, // whether the key may change the agent's files
  file: null, // the file shown, {agent, path}, when it may be edited
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

// ---- markdown ----

// renderMarkdown turns a reply's markdown into a fragment of elements:
// headings, paragraphs, lists, fenced code, inline code, bold, italic and
// links (http and https only, opened apart with rel=noopener). The text
// is only ever set as text: nothing in a reply becomes HTML.
function renderMarkdown(src) {
  const out = document.createDocumentFragment();
  const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
  let para = [];
  let list = null;
  const flush = () => {
    if (para.length) out.append(el("p", {}, inline(para.join("\n"))));
    para = [];
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = /^\s*(```|~~~)\s*([\w+-]*)\s*$/.exec(line))) {
      flush();
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) body.push(lines[i]);
      const code = el("code", {}, body.join("\n"));
      if (m[2]) code.dataset.lang = m[2];
      out.append(el("pre", {}, code));
    } else if ((m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      flush();
      out.append(el("h" + Math.min(m[1].length + 1, 4), {}, inline(m[2])));
    } else if ((m = /^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/.exec(line))) {
      if (para.length) flush();
      const tag = m[1] ? "ul" : "ol";
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = el(tag, {});
        if (tag === "ol" && m[2] !== "1") list.setAttribute("start", String(Number(m[2])));
        out.append(list);
      }
      list.append(el("li", {}, inline(m[3])));
    } else if (!line.trim()) {
      flush();
    } else if (list && /^\s{2,}\S/.test(line)) {
      list.lastChild.append(" ", ...inline(line.trim()));
    } else {
      list = null;
      para.push(line);
    }
  }
  flush();
  return out;
}

// INLINE finds, in order: `code`, **bold**, __bold__, *italic*, _italic_
// and [text](url). Underscores inside words (snake_case, __init__.py)
// are text.
const INLINE = /`([^`\n]+)`|\*\*(.+?)\*\*|(?<![\w.])__([^_\s](?:.*?[^_\s])?)__(?!\w)|\*([^*\s](?:[^*]*[^*\s])?)\*|(?<![\w.])_([^_\s](?:[^_]*[^_\s])?)_(?!\w)|\[([^\]\n]+)\]\(([^()\s]+)\)/g;

// inline returns the nodes of one block's text.
function inline(text) {
  const nodes = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) nodes.push(document.createTextNode(text.slice(last, m.index)));
    last = m.index + m[0].length;
    if (m[1] !== undefined) nodes.push(el("code", {}, m[1]));
    else if (m[2] !== undefined || m[3] !== undefined) nodes.push(el("strong", {}, inline(m[2] ?? m[3])));
    else if (m[4] !== undefined || m[5] !== undefined) nodes.push(el("em", {}, inline(m[4] ?? m[5])));
    else nodes.push(link(m[6], m[7]) || document.createTextNode(m[0]));
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

// link is an anchor to an http(s) URL, or null for any other scheme.
function link(text, href) {
  let url;
  try { url = new URL(href); } catch { return null; }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  return el("a", { href: url.href, rel: "noopener noreferrer", target: "_blank" }, inline(text));
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
  if (!state.key) {
    signOut("Sign in with an API key first.");
    throw new Error("signed out");
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
  $("session-of").hidden = !state.me.admin;
  $("session-of").value = "";
  $("nav-metrics").hidden = !state.me.features.metrics;
  $("who").textContent = (state.me.name || state.me.id) + " · " + state.me.prefix + "… · " + state.me.autonomy + (state.me.admin ? " · admin" : "");
  for (const sel of [$("chat-agent"), $("agent-select"), $("job-agent")]) {
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

// setMarkdown shows a reply's markdown in its bubble.
function setMarkdown(m, text) {
  m.classList.add("md");
  m.replaceChildren(renderMarkdown(text));
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
      setMarkdown(bubble(f.run_id), f.text);
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
  loadBudget().catch(showError);
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

// loadBudget shows what is left of the token budgets of the key and of
// the agent chatted with.
async function loadBudget() {
  const { budgets } = await api("GET", "budget");
  const mine = budgets.filter((b) => b.scope.startsWith("key:") || b.scope.startsWith("agent:" + chatAgent() + ":"));
  $("chat-budget").hidden = mine.length === 0;
  $("chat-budget").textContent = mine.map((b) =>
    (b.scope.startsWith("key:") ? "key" : "agent") + " " + (b.scope.endsWith(":day") ? "daily" : "monthly") + " budget: " +
    b.remaining + " of " + b.limit + " tokens left, replenished " + new Date(b.resets_at).toLocaleString()).join(" · ");
}

function renderHistory(into, messages) {
  for (const m of messages) {
    let text = m.content || "";
    if (m.tool_calls && m.tool_calls.length) text += (text ? "\n" : "") + "→ " + m.tool_calls.map((c) => c.name).join(", ");
    if (m.role === "tool") text = (m.name || "tool") + ": " + text;
    const parts = (m.parts || []).filter((p) => p.ref);
    if (!text && !parts.length) continue;
    const div = el("div", { class: "msg " + m.role }, text);
    if (m.role === "assistant") setMarkdown(div, text);
    for (const p of parts) div.append(mediaView(p));
    into.append(div);
  }
  into.scrollTop = into.scrollHeight;
}

// mediaView shows a message's stored file (GET media/<ref>, with the
// key, so as a blob): an image inline, another file as a download link.
function mediaView(part) {
  const name = part.name || part.type + " (" + (part.media_type || "file") + ")";
  const box = el("div", { class: "media", "data-ref": part.ref });
  const load = () => fetch(API + "/media/" + part.ref, { headers: { Authorization: "Bearer " + state.key } }).then((resp) => {
    if (!resp.ok) throw new Error(name + ": " + resp.status);
    return resp.blob();
  });
  if (part.type === "image") {
    load().then((b) => box.append(el("img", { src: URL.createObjectURL(b), alt: name }))).catch(() => box.append(name + " (no longer kept)"));
  } else {
    box.append(el("a", { href: "#", onclick: (ev) => {
      ev.preventDefault();
      load().then((b) => {
        const a = el("a", { href: URL.createObjectURL(b), download: part.name || "file" });
        a.click();
      }).catch(showError);
    } }, "⤓ " + name));
  }
  return box;
}

// ---- sessions and approvals ----

// loadSessions lists the key's sessions (for an admin key that chose
// so, the channels' conversations, each with the identity that owns it),
// or those matching the search: each with its title (the first message),
// channel, last activity and a preview (the last message, or the line
// that matched).
async function loadSessions() {
  const q = $("session-query").value.trim();
  const of = $("session-of").value === "channels" ? "channel-sessions" : "sessions";
  const data = await api("GET", of + (q ? "?q=" + encodeURIComponent(q) : ""));
  $("session-detail").replaceChildren();
  $("sessions-list").replaceChildren(...data.sessions.map((s) =>
    el("li", { "data-session": s.id, tabindex: 0, onclick: () => openSession(s.id).catch(showError),
      onkeydown: (ev) => ev.key === "Enter" && openSession(s.id).catch(showError) },
      el("div", { class: "title" }, s.title || "(no message yet)"),
      el("div", { class: "meta" }, s.channel ? el("span", { class: "chip" }, s.channel) : null, " ",
        s.read_only ? el("span", { class: "owner" }, s.owner + " · ") : null, s.agent, " · ", when(s.last_activity),
        s.pending_approval ? " · waiting for approval of " + s.pending_approval.tools.join(", ") : ""),
      el("div", { class: "preview" }, s.match || s.preview))));
  if (!data.sessions.length) $("session-detail").append(el("p", { class: "muted" }, q ? "No session matches." : "No sessions yet."));
}

async function openSession(id) {
  const data = await api("GET", "sessions/" + encodeURIComponent(id));
  const log = el("div", { id: "session-log" });
  $("session-detail").replaceChildren(
    el("h3", {}, (data.session.title || id.slice(0, 16)) + (data.truncated ? " (latest messages)" : "")),
    el("p", { class: "muted" }, (data.session.read_only ? data.session.owner + " · read only · " : "") + data.session.agent + " · " + id), log);
  renderHistory(log, data.messages);
  // The runs that delegated to other agents: the tree of their runs,
  // each with its tokens.
  const delegated = [...new Set(data.messages.filter((m) => (m.tool_calls || []).some((c) => c.name === "delegate")).map((m) => m.run_id))];
  for (const run of delegated) {
    const tree = await api("GET", "sessions/" + encodeURIComponent(id) + "/runs/" + encodeURIComponent(run));
    $("session-detail").append(el("div", { class: "run-tree" }, el("strong", {}, "Runs"), runTree([tree.run])));
  }
  log.scrollIntoView({ block: "nearest" });
}

// runTree renders runs and the runs they delegated to, as nested lists:
// each its agent, status and tokens; a delegated run opens its session.
function runTree(runs) {
  return el("ul", {}, ...runs.map((r) => {
    const tokens = (r.usage && r.usage.total_tokens) || 0;
    const label = r.agent + " · " + r.status + " · " + tokens + " tokens" + (r.error ? " · " + r.error : "");
    const node = r.call_id
      ? el("button", { class: "link", "data-run": r.run_id, onclick: () => openSession(r.session_id).catch(showError) }, label)
      : el("span", { "data-run": r.run_id }, label);
    return el("li", {}, node, r.children && r.children.length ? runTree(r.children) : null);
  }));
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
  $("job-new").hidden = !state.me.features.jobs;
  const shown = await moreJobs("");
  if (!shown) {
    $("job-runs").append(el("p", { class: "muted" }, "No scheduled jobs. Make one above, ask an agent to remind you of something, or use ",
      el("code", {}, "lambdaclaw cron add"), "."));
  }
}

// moreJobs appends the page of jobs after cursor and returns how many it
// added.
async function moreJobs(cursor) {
  const data = await api("GET", "jobs" + (cursor ? "?cursor=" + encodeURIComponent(cursor) : ""));
  $("jobs-table").tBodies[0].append(...data.jobs.map((j) => el("tr", {},
    el("td", { "data-label": "Name" }, j.name || j.id), el("td", { "data-label": "Agent" }, j.agent),
    el("td", { "data-label": "Schedule" }, scheduleText(j.schedule)),
    el("td", { "data-label": "Next" }, when(j.next)), el("td", { "data-label": "State" }, j.paused ? "paused" : "active"),
    el("td", {},
      el("button", { onclick: () => jobRuns(j).catch(showError) }, "Runs"), " ",
      el("button", { onclick: () => api("POST", "jobs/" + encodeURIComponent(j.id), { paused: !j.paused }).then(loadJobs).catch(showError) }, j.paused ? "Resume" : "Pause"), " ",
      el("button", { onclick: () => confirm("Delete job " + (j.name || j.id) + "?") && api("DELETE", "jobs/" + encodeURIComponent(j.id)).then(loadJobs).catch(showError) }, "Delete")))));
  const more = $("jobs-more");
  more.hidden = !data.next_cursor;
  more.onclick = data.next_cursor ? () => moreJobs(data.next_cursor).catch(showError) : null;
  return data.jobs.length;
}

// createJob schedules a job from the form; the server validates it as
// `lambdaclaw cron add` does and says what is wrong.
async function createJob() {
  const kind = $("job-kind").value;
  const when = $("job-when").value.trim();
  const body = { agent: $("job-agent").value, name: $("job-name").value.trim(), message: $("job-message").value };
  if (kind === "at") {
    const t = new Date(when);
    if (isNaN(t)) throw new Error("once at: give a date and time, as 2026-05-01T09:00 or 2026-05-01T09:00:00+02:00");
    body.at = t.toISOString();
  } else {
    body[kind] = when;
    if (kind === "cron" && $("job-tz").value.trim()) body.tz = $("job-tz").value.trim();
  }
  await api("POST", "jobs", body);
  for (const id of ["job-name", "job-when", "job-message", "job-tz"]) $(id).value = "";
  await loadJobs();
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
  closeFile();
  $("memory-hits").replaceChildren();
  $("memory-method").textContent = "";
  $("memory-form").hidden = !state.me.features.memory;
  if (!agent) return;
  const data = await api("GET", agentPath(agent));
  state.editable = data.editable;
  const fileItem = (p) => el("li", { tabindex: 0, onclick: () => openFile(agent, p).catch(showError),
    onkeydown: (ev) => ev.key === "Enter" && openFile(agent, p).catch(showError) }, p);
  $("agent-bootstrap").replaceChildren(...data.bootstrap.map(fileItem));
  $("agent-files").replaceChildren(...data.files.map((f) => fileItem(f.path)));
  if (data.truncated) $("agent-files").append(el("li", { class: "muted" }, "…"));
  $("agent-skills").replaceChildren(...data.skills.map((s) => el("li", {}, el("strong", {}, s.name), " (" + s.source + ") ", s.description)));
}

// showPanel shows a file or a memory in the panel beside the lists (over
// them on a phone).
function showPanel(title, text, file) {
  state.file = file || null;
  $("file-title").textContent = title;
  $("file-view").textContent = text;
  $("file-view").hidden = false;
  $("file-text").hidden = true;
  $("file-save").hidden = true;
  $("file-edit").hidden = !(file && state.editable);
  $("file-note").textContent = file && !state.editable ? "Read-only: this key may not change the agent's files." : "";
  $("file-panel").hidden = false;
  $("file-panel").scrollIntoView({ block: "nearest" });
}

function closeFile() {
  state.file = null;
  $("file-panel").hidden = true;
}

async function openFile(agent, p) {
  const data = await api("GET", agentPath(agent, "files", p));
  showPanel(p + (data.truncated ? " (beginning)" : ""), data.text, data.truncated ? null : { agent, path: p });
}

function editFile() {
  $("file-text").value = $("file-view").textContent;
  $("file-view").hidden = true;
  $("file-text").hidden = false;
  $("file-edit").hidden = true;
  $("file-save").hidden = false;
  $("file-text").focus();
}

// saveFile writes the file through the agent's write_file tool; a
// supervised key is asked first, as the agent would be.
async function saveFile() {
  const f = state.file;
  if (!f) return;
  const approved = state.me.autonomy === "full" ||
    confirm("Save " + f.path + "? It changes what every key of agent " + f.agent + " sees.");
  if (!approved) return;
  await api("PUT", agentPath(f.agent, "files", f.path), { text: $("file-text").value, approved });
  await openFile(f.agent, f.path);
  $("file-note").textContent = "Saved.";
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
  showPanel("Memory " + key + " (" + e.category + (e.source ? ", " + e.source : "") + ")", e.text);
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
    el("td", { "data-label": "ID" }, el("code", {}, k.id)), el("td", { "data-label": "Name" }, k.name),
    el("td", { "data-label": "Key" }, k.prefix + "…"),
    el("td", { "data-label": "Autonomy" }, k.autonomy + (k.admin ? ", admin" : "")),
    el("td", { "data-label": "Agents" }, k.agents.length ? k.agents.join(", ") : "all"),
    el("td", { "data-label": "Status" }, k.revoked_at ? "revoked " + when(k.revoked_at) : "active"),
    el("td", {}, k.revoked_at || k.id === state.me.id ? "" :
      el("button", { onclick: () => confirm("Revoke " + (k.name || k.id) + "?") && api("DELETE", "keys/" + encodeURIComponent(k.id)).then(loadKeys).catch(showError) }, "Revoke")))));
}

async function createKey() {
  const data = await api("POST", "keys", { name: $("key-name").value, autonomy: $("key-autonomy").value, admin: $("key-admin").checked });
  $("key-new").hidden = false;
  $("key-secret").textContent = data.key;
  $("key-copied").textContent = "";
  $("key-name").value = "";
  $("key-admin").checked = false;
  await loadKeys();
}

async function copyKey() {
  const secret = $("key-secret").textContent;
  try {
    await navigator.clipboard.writeText(secret);
    $("key-copied").textContent = "Copied.";
  } catch {
    // No clipboard (an http:// page other than localhost): select it.
    getSelection().selectAllChildren($("key-secret"));
    $("key-copied").textContent = "Selected: press Ctrl+C (⌘C) to copy.";
  }
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
  $("key-copy").addEventListener("click", () => copyKey());
  $("session-of").addEventListener("change", () => loadSessions().catch(showError));
  $("session-search").addEventListener("submit", (ev) => {
    ev.preventDefault();
    loadSessions().catch(showError);
  });
  $("job-kind").addEventListener("change", () => {
    const kind = $("job-kind").value;
    $("job-when").placeholder = { every: "1h, 30m…", cron: "0 9 * * 1-5", at: "2026-05-01T09:00" }[kind];
    $("job-tz-label").hidden = kind !== "cron";
  });
  $("job-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    $("job-error").textContent = "";
    createJob().catch((err) => { $("job-error").textContent = err.message; });
  });
  $("file-edit").addEventListener("click", editFile);
  $("file-save").addEventListener("click", () => saveFile().catch(showError));
  $("file-close").addEventListener("click", closeFile);
  // Ctrl+K (⌘K) searches the sessions; Esc closes an opened file.
  document.addEventListener("keydown", (ev) => {
    if (!state.me) return;
    if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "k") {
      ev.preventDefault();
      if (state.view !== "sessions") show("sessions");
      $("session-query").focus();
      $("session-query").select();
    } else if (ev.key === "Escape" && !$("file-panel").hidden) {
      closeFile();
    }
  });
  if (state.key) signIn(state.key);
});
