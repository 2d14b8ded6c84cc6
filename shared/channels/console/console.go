// Package console is lambdaclaw's web console: a few hand-written pages
// (web/, embedded, no build step, nothing fetched from elsewhere) and the
// small JSON API they read and write through, served by the gateway (see
// gateway.Config.Console) under gateway.ConsolePrefix, /v1/lambdaclaw/.
//
// Every endpoint acts for the API key of the request (its owner,
// "key:<id>"): a key sees only its own sessions, approvals, jobs and
// memories, and another owner's are answered 404 as if they did not
// exist; it sees only the agents it may use. Keys are listed, created
// and revoked by admin keys only (403 for others). The one exception is
// the operator's jobs: those made on the command line (`lambdaclaw cron
// add`, owner user:local, Config.Operator) are the server operator's,
// and admin keys are the operator's keys, so an admin key lists and acts
// on them too, after its own; every job carries its "owner". Bodies are limited to
// MaxBody bytes (a file's, MaxFileBody); bad input is a 4xx with the
// OpenAI error JSON the rest of the API uses.
//
// A workspace file is written through the agent's own write_file tool
// (its path checks, size limits and the workspace's quota), held to the
// tool's policy for the key's autonomy as the model's calls are
// (tool.Judge): a read_only key is refused (403 read_only), a
// supervised one writes once the person confirms ("approved": true;
// 403 approval_required otherwise), a full one writes.
//
//	GET    /v1/lambdaclaw/me                          the key, its owner, its agents, what the console can show
//	GET    /v1/lambdaclaw/sessions?q=                 the owner's sessions, newest first, each with its title, channel,
//	                                                  last activity, preview and pending approval; q: those whose history holds its words
//	GET    /v1/lambdaclaw/sessions/{id}               a session and its history
//	GET    /v1/lambdaclaw/approvals                   the pending approvals of the owner's sessions
//	GET    /v1/lambdaclaw/jobs?limit=&cursor=         a page of the owner's scheduled jobs, oldest first (an admin's: then the operator's)
//	POST   /v1/lambdaclaw/jobs                        {"agent","name","message", one of "every","cron"(+"tz"),"at"}: make a job
//	GET    /v1/lambdaclaw/jobs/{id}/runs              a job's latest runs
//	POST   /v1/lambdaclaw/jobs/{id}                   {"paused": bool}: pause or resume a job
//	DELETE /v1/lambdaclaw/jobs/{id}                   delete a job
//	GET    /v1/lambdaclaw/agents                      the agents the key may use
//	GET    /v1/lambdaclaw/budget                      the token budgets of the key and its agents: scope, window, limit, spent, remaining, resets_at
//	GET    /v1/lambdaclaw/agents/{agent}              an agent's bootstrap files, other files, skills, and whether the key may edit
//	GET    /v1/lambdaclaw/agents/{agent}/files/{path} a workspace file's text
//	PUT    /v1/lambdaclaw/agents/{agent}/files/{path} {"text", "approved"}: write it through the agent's write_file
//	GET    /v1/lambdaclaw/agents/{agent}/memory?q=    search the memories the owner sees
//	GET    /v1/lambdaclaw/agents/{agent}/memory/{key} one memory
//	DELETE /v1/lambdaclaw/agents/{agent}/memory/{key} forget one of the owner's memories
//	GET    /v1/lambdaclaw/keys                        (admin) every key
//	POST   /v1/lambdaclaw/keys                        (admin) create a key; its secret is in the answer, once
//	DELETE /v1/lambdaclaw/keys/{id}                   (admin) revoke a key
//
// Chat goes over the WebSocket (/ws, package wsproto), the key offered as
// a subprotocol; metrics are GET /metrics, when the server has it, for
// admin keys.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed web
var web embed.FS

// pages serves the files of web/: index.html at /, the icon also at
// /favicon.ico, the rest under /console/.
var pages = func() http.Handler {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Everything is the console's own: no inline scripts, no other
		// origin, no framing.
		h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data: blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		switch {
		case r.URL.Path == "/":
			http.ServeFileFS(w, r, sub, "index.html")
			return
		case r.URL.Path == "/favicon.ico": // what browsers ask for first
			http.ServeFileFS(w, r, sub, "favicon.svg")
			return
		case strings.HasSuffix(r.URL.Path, "/"): // no listings
			http.NotFound(w, r)
			return
		}
		http.StripPrefix("/console", files).ServeHTTP(w, r)
	})
}()
