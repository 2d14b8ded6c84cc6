package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/whatsapp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/websearch"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/setup"
)

// The checks of a local home (doctor.go runs them).

// maxModelsBytes bounds the /models answer the provider check reads.
const maxModelsBytes = 4 << 20

// defaultOpenAIBase is where an openai provider without base_url goes.
const defaultOpenAIBase = "https://api.openai.com/v1"

// checkHome checks that the data directory is a directory this user can
// write, by creating and removing a file in it. A missing one passes when
// serve can create it.
func (d *doctor) checkHome(context.Context) finding {
	home := d.cfg.Home
	fix := "make it writable for this user (chown or chmod u+rwx " + home + "), or point LAMBDACLAW_HOME at a writable directory"
	st, err := os.Stat(home)
	switch {
	case errors.Is(err, os.ErrNotExist):
		parent := existingAncestor(home)
		if err := probeWrite(parent); err != nil {
			return finding{Verdict: fail, Detail: fmt.Sprintf("%s does not exist, and %s, where serve would create it, is not writable: %v", home, parent, err), Fix: fix}
		}
		return finding{Verdict: pass, Detail: home + " does not exist yet: serve creates it"}
	case err != nil:
		return finding{Verdict: fail, Detail: err.Error(), Fix: fix}
	case !st.IsDir():
		return finding{Verdict: fail, Detail: home + " is not a directory", Fix: "point LAMBDACLAW_HOME at a directory"}
	}
	if err := probeWrite(home); err != nil {
		return finding{Verdict: fail, Detail: fmt.Sprintf("%s is not writable: %v", home, err), Fix: fix}
	}
	return finding{Verdict: pass, Detail: home + " is writable"}
}

// probeWrite creates, writes and removes a file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return unwrapPath(err)
	}
	_, werr := f.WriteString("lambdaclaw doctor\n")
	cerr := f.Close()
	rerr := os.Remove(f.Name())
	return errors.Join(werr, cerr, rerr)
}

// unwrapPath drops the path and operation of a *PathError, which the
// report names already.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}

// existingAncestor is the nearest directory above path that exists.
func existingAncestor(path string) string {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			return dir
		}
	}
}

// checkDatabase runs SQLite's integrity check on the database and compares
// its schema version with this binary's.
func (d *doctor) checkDatabase(ctx context.Context) finding {
	path := d.cfg.DBPath()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return finding{Verdict: info, Detail: "no database yet at " + path + ": serve creates it"}
	}
	h, err := sqlite.Check(ctx, path)
	switch {
	case err != nil:
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check that " + path + " is a lambdaclaw database readable by this user"}
	case len(h.Problems) > 0:
		return finding{Verdict: fail, Detail: fmt.Sprintf("integrity check found %d problems, first: %s", len(h.Problems), firstLine(h.Problems[0])),
			Fix: "stop serve, keep a copy of " + path + ", and recover it (sqlite3 " + path + " .recover) or restore a backup"}
	case h.Version > h.Want:
		return finding{Verdict: fail, Detail: fmt.Sprintf("schema version %d is newer than this binary's %d", h.Version, h.Want),
			Fix: "a newer lambdaclaw wrote it: upgrade this binary (lambdaclaw version)"}
	case h.Version < h.Want:
		return finding{Verdict: pass, Detail: fmt.Sprintf("integrity ok, schema version %d: serve migrates it to %d", h.Version, h.Want)}
	}
	return finding{Verdict: pass, Detail: fmt.Sprintf("integrity ok, schema version %d (current)", h.Version)}
}

// checkDisk checks the free space of the data directory's file system.
func (d *doctor) checkDisk(context.Context) finding {
	dir := d.cfg.Home
	if _, err := os.Stat(dir); err != nil {
		dir = existingAncestor(dir)
	}
	free, err := d.freeBytes(dir)
	if err != nil {
		return finding{Verdict: fail, Detail: fmt.Sprintf("free space of %s: %v", dir, err), Fix: "check the data directory's file system"}
	}
	if free < d.minFree {
		return finding{Verdict: fail, Detail: fmt.Sprintf("%s free on the file system of %s, under %s", bytesText(free), dir, bytesText(d.minFree)),
			Fix: "free space there: SQLite needs room to write, and refuses writes when the disk is full"}
	}
	return finding{Verdict: pass, Detail: fmt.Sprintf("%s free on the file system of %s", bytesText(free), dir)}
}

// freeBytes is the space on path's file system available to this user.
func freeBytes(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// bytesText writes n in binary units, as "1.5 GiB".
func bytesText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// checkProvider checks that a provider answers and accepts its key: an
// OpenAI-compatible server lists its models (GET /models, free), Bedrock
// answers a one-token Converse call.
func (d *doctor) checkProvider(ctx context.Context, p config.Provider) finding {
	// A key whose variable is not set is sent as none, as serve does: a
	// compatible server that takes no key still answers. OpenAI always
	// wants one.
	unset := p.APIKey.Env != "" && p.APIKey.Value() == ""
	unsetDetail, unsetFix := "its api_key names "+p.APIKey.Env+", which is not set", "export "+p.APIKey.Env+" in the environment serve runs in"
	base := strings.TrimRight(p.BaseURL, "/")
	if base == "" {
		base = defaultOpenAIBase
	}
	if unset && (p.Type == config.ProviderBedrock || base == defaultOpenAIBase) {
		return finding{Verdict: fail, Detail: unsetDetail, Fix: unsetFix}
	}
	if p.Type == config.ProviderBedrock {
		return d.checkBedrock(ctx, p)
	}
	where := "base_url of provider " + p.Name + " in " + d.configPath()
	if p.Name == "openai" && p.BaseURL == getenv("OPENAI_BASE_URL") {
		where = "OPENAI_BASE_URL"
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return finding{Verdict: fail, Detail: fmt.Sprintf("base URL %q is not an http(s) URL", base), Fix: "set " + where + " to the API root, such as https://api.openai.com/v1"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check " + where}
	}
	if k := p.APIKey.Value(); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return finding{Verdict: fail, Detail: fmt.Sprintf("cannot reach %s: %v", u.Host, innermost(err)),
			Fix: "check that the server runs and that " + where + " is its API root"}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBytes))
	keyName := "the key"
	if p.APIKey.Set() {
		keyName = "the key in " + p.APIKey.Source()
	}
	refused := resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
	switch {
	case refused && unset:
		return finding{Verdict: fail, Detail: fmt.Sprintf("%s; %s refused the request without a key (%s)", unsetDetail, u.Host, resp.Status), Fix: unsetFix}
	case refused:
		return finding{Verdict: fail, Detail: fmt.Sprintf("%s refused %s (%s)", u.Host, keyName, resp.Status),
			Fix: "check the key, or make a new one at the provider, and put it in " + or(p.APIKey.Source(), "an api_key reference (functions/lambdaclaw/README.md, Configuration)")}
	case resp.StatusCode == http.StatusNotFound:
		return finding{Verdict: fail, Detail: fmt.Sprintf("%s/models not found (404)", base),
			Fix: where + " must be the API root, which usually ends in /v1"}
	case resp.StatusCode/100 != 2:
		return finding{Verdict: fail, Detail: fmt.Sprintf("%s/models answered %s", base, resp.Status), Fix: "check the provider's status and " + where}
	case err != nil:
		return finding{Verdict: fail, Detail: fmt.Sprintf("%s/models: %v", base, err), Fix: "check " + where}
	}
	var page struct {
		Data []modelEntry `json:"data"`
	}
	detail := fmt.Sprintf("%s answers, key accepted", u.Host)
	if p.APIKey.Value() == "" {
		detail = fmt.Sprintf("%s answers (no key configured)", u.Host)
	}
	if json.Unmarshal(body, &page) == nil && len(page.Data) > 0 {
		if slices.Contains(page.Data, modelEntry{ID: p.Model}) {
			detail += ", model " + p.Model + " listed"
		} else {
			detail += fmt.Sprintf(", model %s not among the %d it lists (an alias may still work)", p.Model, len(page.Data))
		}
	}
	if unset {
		return finding{Verdict: warn, Detail: fmt.Sprintf("%s answers without a key, though %s", u.Host, unsetDetail),
			Fix: "if the server takes no key, remove api_key from provider " + p.Name + " in " + d.configPath() + "; else " + unsetFix}
	}
	return finding{Verdict: pass, Detail: detail}
}

// modelEntry is a model of a /models list.
type modelEntry struct {
	ID string `json:"id"`
}

// checkBedrock makes a one-token Converse call with the environment's AWS
// credentials.
func (d *doctor) checkBedrock(ctx context.Context, p config.Provider) finding {
	return checkBedrock(ctx, p, d.http.Timeout, "the model of provider "+p.Name+" in "+d.configPath())
}

// checkBedrock makes a one-token Converse call to p's model with the
// environment's AWS credentials, bounded by timeout: some ten input tokens
// and one output, a hundred-thousandth of a dollar with Claude Haiku 4.5.
// Only a call proves access (the control plane's GetFoundationModel does
// not; CountTokens is free but needs no model access). A refusal's fix
// says what to do about it; where names where the model is set.
func checkBedrock(ctx context.Context, p config.Provider, timeout time.Duration, where string) finding {
	prov, err := setup.Provider(ctx, p, 1<<10, sdkAWS)
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check the AWS credentials (AWS_PROFILE, aws sso login) and the Region"}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = prov.Generate(ctx, llm.Request{Messages: []chat.Message{{Role: chat.User, Content: "ping"}}, Params: llm.Params{MaxTokens: 1}}, nil)
	if err == nil {
		return finding{Verdict: pass, Detail: fmt.Sprintf("a one-token call to %s in %s answered", p.Model, p.Region)}
	}
	f := finding{Verdict: fail, Detail: fmt.Sprintf("a one-token call to %s in %s failed: %v", p.Model, p.Region, err)}
	code, msg := "", ""
	if api, ok := errors.AsType[*awsapi.Error](err); ok {
		code, msg = api.Code, api.Message
	}
	switch {
	case code == "AccessDeniedException" && strings.Contains(msg, "not authorized to perform"):
		f.Fix = "allow your credentials bedrock:InvokeModel on the model (doctor calls as you; the stack grants its functions their own)"
	case code == "AccessDeniedException":
		f.Fix = "enable access to " + p.Model + " for the account in " + p.Region + " in the Bedrock console (Model access); an Anthropic model wants its use-case form " +
			"once per account, and a third-party model's first call subscribes the account through AWS Marketplace (aws-marketplace:Subscribe)"
	case code == "ResourceNotFoundException":
		f.Fix = p.Region + " does not offer that model: set " + where + " to one it lists (aws bedrock list-inference-profiles, aws bedrock list-foundation-models)"
	case code == "ValidationException" && strings.Contains(msg, "on-demand throughput"):
		f.Fix = "the model is called through an inference profile: set " + where + " to the profile's id, the model's with a prefix such as us., eu. or global. (aws bedrock list-inference-profiles)"
	case code == "ThrottlingException" || code == "ServiceQuotaExceededException":
		f.Verdict = warn
		f.Detail = fmt.Sprintf("%s in %s is reachable but throttled the call: %v", p.Model, p.Region, err)
		f.Fix = "the account's Bedrock quota for the model is used up or low: wait, or request more in Service Quotas (Amazon Bedrock, the model's requests and tokens per minute)"
	default:
		f.Fix = "check the AWS credentials (AWS_PROFILE, aws sso login), the Region " + p.Region + " and " + where
	}
	return f
}

// innermost is the innermost error of a chain, such as "connection
// refused" under the url.Error and net.OpError that carry it.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// checkEmbedder embeds one short text with the embeddings section's model.
func (d *doctor) checkEmbedder(ctx context.Context) finding {
	e := d.cfg.Embeddings
	if e == nil {
		return finding{Verdict: info, Detail: "not configured: memory search uses keywords only (shared/core/memory/README.md)"}
	}
	fix := "check the embeddings section of " + d.configPath() + " (type, base_url, model, api_key)"
	emb, err := newEmbedder(ctx, e)
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: fix}
	}
	ctx, cancel := context.WithTimeout(ctx, d.http.Timeout)
	defer cancel()
	vs, err := emb.Embed(ctx, []string{"lambdaclaw doctor"})
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: fix}
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return finding{Verdict: fail, Detail: fmt.Sprintf("%s returned %d vectors for one text", emb.Model(), len(vs)), Fix: fix}
	}
	return finding{Verdict: pass, Detail: fmt.Sprintf("%s made a vector of %d dimensions", emb.Model(), len(vs[0]))}
}

// checkSandbox checks the exec tool's sandbox backend as serve sets it up
// (localExec): bubblewrap must make a sandbox. An explicit
// sandbox.backend: bubblewrap that does not work fails; the default one
// is reported for information (on macOS, say, there is none), since serve
// then only leaves the exec tool out.
func (d *doctor) checkSandbox(ctx context.Context) finding {
	switch d.cfg.Sandbox.Backend {
	case config.SandboxNone:
		return finding{Verdict: info, Detail: "sandbox.backend is none: agents have no exec tool"}
	case config.SandboxFargate:
		return finding{Verdict: fail, Detail: "sandbox.backend fargate runs on AWS only: serve offers no exec tool",
			Fix: "set sandbox.backend to bubblewrap (or none) in " + d.configPath()}
	}
	ctx, cancel := context.WithTimeout(ctx, d.http.Timeout)
	defer cancel()
	if err := d.probeSandbox(ctx); err != nil {
		f := finding{Verdict: info, Detail: "bubblewrap cannot make a sandbox here, so serve offers no exec tool: " + err.Error()}
		if d.cfg.Sandbox.Backend == config.SandboxBubblewrap {
			f.Verdict = fail
			f.Fix = "install bubblewrap (apt-get install bubblewrap), allow unprivileged user namespaces, run serve as an ordinary user, or set sandbox.backend: none"
		}
		return f
	}
	return finding{Verdict: pass, Detail: "bubblewrap makes sandboxes here: agents have the exec tool"}
}

// probeBubblewrap runs the bubblewrap backend's probe, as serve does, in a
// throwaway data directory: a backend on the real one would remove the
// sandboxes of a running server (it reaps what it takes for orphans).
func probeBubblewrap(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "lambdaclaw-doctor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b, err := newBubblewrap(tmp, 0, slog.New(slog.DiscardHandler), func(string) (string, error) {
		return "", errors.New("doctor runs no agent's commands")
	})
	if err != nil {
		return err
	}
	defer b.Close()
	return b.Probe(ctx)
}

// checkMCP starts the configured MCP server name and lists its tools, as
// `lambdaclaw mcp tools` does.
func (d *doctor) checkMCP(name string) finding {
	d.mcpOnce.Do(func() {
		d.mcp, d.mcpErr = setup.MCP(d.cfg.MCP, getenv, slog.New(slog.DiscardHandler))
	})
	if d.mcpErr != nil {
		return finding{Verdict: fail, Detail: d.mcpErr.Error(), Fix: "check the mcp section of " + d.configPath()}
	}
	tools, err := mcpServer(d.mcp, name)
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(),
			Fix: "check mcp.servers." + name + " in " + d.configPath() + " (lambdaclaw mcp list shows every server)"}
	}
	return finding{Verdict: pass, Detail: fmt.Sprintf("started, %d tools", len(tools))}
}

// telegramClient is the Bot API client of the configured token.
func (d *doctor) telegramClient() *telegram.Client {
	return telegram.NewClient(d.cfg.Telegram.APIBase, d.cfg.Telegram.Token)
}

// checkTelegram checks the bot token with getMe.
func (d *doctor) checkTelegram(ctx context.Context) finding {
	if d.cfg.Telegram.Token == "" {
		return finding{Verdict: fail, Detail: "TELEGRAM_BOT_TOKEN is not set", Fix: "export TELEGRAM_BOT_TOKEN, the token @BotFather gave"}
	}
	ctx, cancel := context.WithTimeout(ctx, d.http.Timeout)
	defer cancel()
	me, err := d.telegramClient().GetMe(ctx)
	if apiErr, ok := errors.AsType[*channel.Error](err); ok && (apiErr.Status == http.StatusUnauthorized || apiErr.Status == http.StatusNotFound) {
		return finding{Verdict: fail, Detail: "Telegram refused the token in TELEGRAM_BOT_TOKEN (" + apiErr.Message + ")",
			Fix: "copy the token again from @BotFather (/token), or make a new one"}
	}
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check the network, and TELEGRAM_API_BASE when it is set"}
	}
	state := "the channel is off (telegram.enabled is false)"
	if d.cfg.Telegram.Enabled {
		state = "the channel is on, mode " + d.cfg.Telegram.Mode
	}
	return finding{Verdict: pass, Detail: fmt.Sprintf("token of @%s accepted; %s", me.Username, state)}
}

// checkWhatsApp reads the business phone number (GET /<phone number id>)
// with the access token: the token is valid and may use the number.
func (d *doctor) checkWhatsApp(ctx context.Context) finding {
	wa := d.cfg.Channels.WhatsApp
	ctx, cancel := context.WithTimeout(ctx, d.http.Timeout)
	defer cancel()
	p, err := whatsapp.NewClient(wa.APIBase, wa.PhoneNumberID, wa.AccessToken.Value()).PhoneNumber(ctx)
	if apiErr, ok := errors.AsType[*channel.Error](err); ok {
		switch apiErr.Code {
		case strconv.Itoa(whatsapp.CodeBadToken):
			return finding{Verdict: fail, Detail: "WhatsApp refused the access token in " + wa.AccessToken.Source() + " (" + apiErr.Message + ")",
				Fix: "generate a system user's token with whatsapp_business_messaging (Business settings → Users → System users)"}
		case "100":
			return finding{Verdict: fail, Detail: "the token may not use the phone number id " + wa.PhoneNumberID + " (" + apiErr.Message + ")",
				Fix: "copy the Phone number ID from WhatsApp → API Setup into channels.whatsapp.phone_number_id, and assign the WhatsApp account to the system user"}
		}
	}
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check the network, and channels.whatsapp.api_base when it is set"}
	}
	return finding{Verdict: pass, Detail: fmt.Sprintf("number %s (%s) of %q, quality %s; Meta must call %s", p.DisplayPhoneNumber, p.ID, p.VerifiedName,
		or(p.QualityRating, "unknown"), config.WhatsAppWebhookPath)}
}

// webhookInfo is the part of getWebhookInfo's answer the check reads.
type webhookInfo struct {
	URL              string `json:"url"`
	PendingUpdates   int    `json:"pending_update_count"`
	LastErrorDate    int64  `json:"last_error_date"`
	LastErrorMessage string `json:"last_error_message"`
	// AllowedUpdates are the kinds of update the webhook gets; absent,
	// all of the usual kinds.
	AllowedUpdates []string `json:"allowed_updates"`
}

// checkWebhook compares the bot's webhook (getWebhookInfo) with the mode:
// in webhook mode it must be public_url's, in polling mode there must be
// none (Telegram refuses getUpdates while a webhook is set). A delivery
// error of the last hour fails too, and so does a webhook registered
// without button presses (callback_query, by an older version).
func (d *doctor) checkWebhook(ctx context.Context) finding {
	tc := d.cfg.Telegram
	if tc.Token == "" {
		return finding{Verdict: fail, Detail: "no token to ask with", Fix: "export TELEGRAM_BOT_TOKEN"}
	}
	ctx, cancel := context.WithTimeout(ctx, d.http.Timeout)
	defer cancel()
	var wi webhookInfo
	if err := d.telegramClient().Call(ctx, "getWebhookInfo", nil, &wi); err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check the network, and TELEGRAM_API_BASE when it is set"}
	}
	pending := fmt.Sprintf("%d updates pending", wi.PendingUpdates)
	if !tc.Enabled || tc.Mode != "webhook" {
		if wi.URL != "" {
			return finding{Verdict: fail, Detail: "the bot has a webhook (" + wi.URL + "), so long polling gets no updates",
				Fix: "lambdaclaw telegram remove (or set telegram.mode: webhook)"}
		}
		return finding{Verdict: pass, Detail: "no webhook: long polling gets the updates; " + pending}
	}
	want := strings.TrimRight(tc.PublicURL, "/") + config.TelegramWebhookPath
	if wi.URL != want {
		got := "none"
		if wi.URL != "" {
			got = wi.URL
		}
		return finding{Verdict: fail, Detail: fmt.Sprintf("the webhook is %s, want %s", got, want), Fix: "lambdaclaw telegram setup"}
	}
	if len(wi.AllowedUpdates) > 0 && !slices.Contains(wi.AllowedUpdates, "callback_query") {
		return finding{Verdict: fail, Detail: fmt.Sprintf("the webhook gets only %s updates, not button presses (callback_query): approvals' buttons do nothing",
			strings.Join(wi.AllowedUpdates, ", ")), Fix: "lambdaclaw telegram setup"}
	}
	if wi.LastErrorMessage != "" && d.now().Sub(time.Unix(wi.LastErrorDate, 0)) < time.Hour {
		return finding{Verdict: fail, Detail: fmt.Sprintf("Telegram could not deliver to %s at %s: %s; %s", want, time.Unix(wi.LastErrorDate, 0).UTC().Format(time.RFC3339), wi.LastErrorMessage, pending),
			Fix: "check that telegram.public_url reaches this server from the internet, over https with a valid certificate"}
	}
	return finding{Verdict: pass, Detail: "webhook set to " + want + "; " + pending}
}

// checkClock compares the local clock with the Date headers of the
// answers the other checks received. An answer's Date was written between
// the request's sending and the answer's arrival, to the second.
func (d *doctor) checkClock(context.Context) finding {
	d.mu.Lock()
	samples := slices.Clone(d.dates)
	d.mu.Unlock()
	if len(samples) == 0 {
		return finding{Verdict: info, Detail: "not compared: the clock is compared with the time (the Date header) of the answers of the servers " +
			"the other checks call (providers, embeddings, Telegram), and none answered; fix those checks and run doctor again, " +
			"or see that the clock is synchronised (timedatectl status: NTP service active)"}
	}
	var worst time.Duration
	var from string
	for _, s := range samples {
		var skew time.Duration // how far the local clock is ahead
		switch {
		case s.sent.After(s.remote.Add(time.Second)):
			skew = s.sent.Sub(s.remote.Add(time.Second))
		case s.received.Before(s.remote):
			skew = -s.remote.Sub(s.received)
		}
		if skew.Abs() >= worst.Abs() {
			worst, from = skew, s.host
		}
	}
	if worst.Abs() > d.maxSkew {
		dir := "ahead of"
		if worst < 0 {
			dir = "behind"
		}
		return finding{Verdict: fail, Detail: fmt.Sprintf("the local clock is %s %s %s's", worst.Abs().Round(time.Second), dir, from),
			Fix: "synchronise it (timedatectl set-ntp true, or your system's time settings): signed AWS requests fail beyond 5 minutes"}
	}
	return finding{Verdict: pass, Detail: fmt.Sprintf("within %s of %s", max(worst.Abs().Round(time.Second), time.Second), from)}
}

// checkWebSearch searches once, for one result, through the configured
// web search provider: its URL answers and its key is accepted.
func (d *doctor) checkWebSearch(ctx context.Context) finding {
	ws := d.cfg.Tools.WebSearch
	cfg := websearch.Config{Provider: ws.Provider, URL: ws.URL, MaxResults: 1, Timeout: d.http.Timeout, Client: d.http}
	if ws.Provider != websearch.SearXNG {
		cfg.Key = ws.Key
	}
	s, err := websearch.New(cfg)
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "correct tools.web_search in " + d.configPath()}
	}
	rs, err := s.Search(ctx, websearch.Query{Text: "lambdaclaw", Count: 1})
	if e, ok := errors.AsType[*websearch.Error](err); ok {
		switch {
		case e.BadKey():
			return finding{Verdict: fail, Detail: e.Error(), Fix: "check the key in " + ws.APIKey.Source() + " (tools.web_search.api_key)"}
		case e.RateLimited():
			return finding{Verdict: warn, Detail: e.Error(), Fix: "the key works but is over its rate or quota now: wait, or raise the plan's limits"}
		case ws.Provider == websearch.SearXNG && e.Status == http.StatusForbidden:
			return finding{Verdict: fail, Detail: e.Error(), Fix: "list json under search.formats in the instance's settings.yml"}
		}
	}
	if err != nil {
		return finding{Verdict: fail, Detail: err.Error(), Fix: "check tools.web_search.url in " + d.configPath() + " and the network"}
	}
	return finding{Verdict: pass, Detail: fmt.Sprintf("%s answered a search (%d result)", ws.Provider, len(rs))}
}
