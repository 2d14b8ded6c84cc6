// Package whatsapp is lambdaclaw's WhatsApp channel: an adapter of the
// channel port (shared/core/channel) for the WhatsApp Business Cloud API.
// Its Client calls the Graph API (POST /<phone number id>/messages for
// text, reply buttons and templates; GET /<phone number id>); Platform is
// the channel.Platform the engine sends through, which keeps the 24-hour
// customer service window (window.go); Webhook (webhook.go) verifies and
// parses what Meta delivers into channel.Inbound values, from users and
// from groups of the Groups API. WhatsApp cannot edit a sent message, so
// Platform is no channel.Editor.
package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// DefaultAPIBase is the Graph API, with the version the adapter speaks.
const DefaultAPIBase = "https://graph.facebook.com/v21.0"

// Limits of the Cloud API's messages, in characters (counted here in
// UTF-16 units, never fewer).
const (
	// MaxTextLen is the longest text message body.
	MaxTextLen = 4096
	// MaxButtonBody is the longest body of an interactive message.
	MaxButtonBody = 1024
	// MaxButtons is how many reply buttons a message may carry.
	MaxButtons = 3
	// MaxButtonTitle is the longest reply button title.
	MaxButtonTitle = 20
	// MaxButtonID is the longest reply button id (what comes back when
	// the button is pressed).
	MaxButtonID = 256
)

// Graph error codes the adapter acts on.
const (
	// CodeReengagement is "Re-engagement message": more than 24 hours
	// have passed since the customer last wrote.
	CodeReengagement = 131047
	// CodeBadToken is "Access token has expired" (or is invalid).
	CodeBadToken = 190
)

// rateLimits are the Graph codes of rate limits, with how long to wait
// when the answer says nothing (Meta sends no Retry-After): the app's
// call limit (4) and the business account's (80007) count per hour; the
// throughput limit (130429) clears within seconds; a pair of business
// and customer numbers (131056) takes about one message every 6 seconds.
var rateLimits = map[int]time.Duration{
	4:      time.Minute,
	80007:  time.Minute,
	130429: 2 * time.Second,
	131056: 6 * time.Second,
}

// Client calls the Cloud API for one business phone number with a bearer
// access token, which never appears in its errors.
type Client struct {
	base, phoneID, token string
	http                 *http.Client
}

// NewClient returns a client of base (DefaultAPIBase when empty) for the
// phone number id phoneID.
func NewClient(base, phoneID, token string) *Client {
	if base == "" {
		base = DefaultAPIBase
	}
	return &Client{base: strings.TrimRight(base, "/"), phoneID: phoneID, token: token, http: &http.Client{Timeout: 30 * time.Second}}
}

// graphError is the body of an unsuccessful Graph API answer.
type graphError struct {
	Error *struct {
		Message   string `json:"message"`
		Type      string `json:"type"`
		Code      int    `json:"code"`
		Subcode   int    `json:"error_subcode"`
		ErrorData struct {
			Details string `json:"details"`
		} `json:"error_data"`
		FBTraceID string `json:"fbtrace_id"`
	} `json:"error"`
}

// call sends a request to path (below the phone number id) and decodes a
// successful answer into out; an unsuccessful one is a *channel.Error.
func (c *Client) call(ctx context.Context, method, path, query string, in, out any) error {
	name := method + " /{phone-number-id}" + path
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("whatsapp %s: %w", name, err)
		}
		body = bytes.NewReader(b)
	}
	u := c.base + "/" + url.PathEscape(c.phoneID) + path
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("whatsapp %s: %s", name, c.scrub(err.Error()))
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.do(ctx, req, name, out)
}

// do sends req with the token and decodes a successful answer into out;
// an unsuccessful one is a *channel.Error.
func (c *Client) do(ctx context.Context, req *http.Request, name string, out any) error {
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("whatsapp %s: %w", name, ctx.Err())
		}
		return fmt.Errorf("whatsapp %s: %s", name, c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("whatsapp %s: read: %s", name, c.scrub(err.Error()))
	}
	if resp.StatusCode/100 != 2 {
		return c.apiError(name, resp, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("whatsapp %s: decode answer: %w", name, err)
		}
	}
	return nil
}

// apiError turns an unsuccessful answer into a *channel.Error: rate
// limits wait (Retry-After when given, else the code's usual wait), bad
// requests, refusals and missing objects are permanent, a bad token and
// server errors are worth retrying.
func (c *Client) apiError(name string, resp *http.Response, raw []byte) *channel.Error {
	e := &channel.Error{Platform: "whatsapp", Method: name, Status: resp.StatusCode}
	var ge graphError
	if json.Unmarshal(raw, &ge) != nil || ge.Error == nil {
		e.Message = "unexpected answer: " + c.scrub(channel.Cut(string(raw), 200))
	} else {
		g := ge.Error
		e.Code = strconv.Itoa(g.Code)
		e.Message = g.Message
		if g.ErrorData.Details != "" {
			e.Message += ": " + g.ErrorData.Details
		}
		if g.FBTraceID != "" {
			e.Message += " (fbtrace_id " + g.FBTraceID + ")"
		}
		e.Message = c.scrub(e.Message)
		if wait, ok := rateLimits[g.Code]; ok {
			e.RetryAfter = wait
		}
	}
	if resp.StatusCode == http.StatusTooManyRequests && e.RetryAfter == 0 {
		e.RetryAfter = time.Minute
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 && (e.RetryAfter > 0 || resp.StatusCode == http.StatusTooManyRequests) {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	switch resp.StatusCode {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound:
		e.Permanent = e.RetryAfter == 0
	}
	return e
}

// graphCode returns the Graph error code of err, or 0.
func graphCode(err error) int {
	var e *channel.Error
	if !errors.As(err, &e) {
		return 0
	}
	n, _ := strconv.Atoi(e.Code)
	return n
}

func (c *Client) scrub(s string) string { return scrub.Known(s, c.token) }

// message is the body of POST /<phone number id>/messages.
type message struct {
	MessagingProduct string       `json:"messaging_product"`
	RecipientType    string       `json:"recipient_type"`
	To               string       `json:"to"`
	Type             string       `json:"type"`
	Text             *textBody    `json:"text,omitempty"`
	Interactive      *interactive `json:"interactive,omitempty"`
	Template         *template    `json:"template,omitempty"`
	Image            *mediaBody   `json:"image,omitempty"`
	Document         *mediaBody   `json:"document,omitempty"`
}

type textBody struct {
	Body string `json:"body"`
}

type interactive struct {
	Type string `json:"type"`
	Body struct {
		Text string `json:"text"`
	} `json:"body"`
	Action struct {
		Buttons []replyButton `json:"buttons"`
	} `json:"action"`
}

type replyButton struct {
	Type  string `json:"type"`
	Reply struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	} `json:"reply"`
}

type template struct {
	Name     string `json:"name"`
	Language struct {
		Code string `json:"code"`
	} `json:"language"`
}

// sent is a successful answer of POST /<phone number id>/messages.
type sent struct {
	Messages []struct {
		ID string `json:"id"`
	} `json:"messages"`
}

// GroupPrefix marks an address (Outgoing.To) as a group's: "g:" and the
// group id of the Groups API; any other address is a user's wa_id.
const GroupPrefix = "g:"

// post sends m to its address and returns the message's id (a wamid).
func (c *Client) post(ctx context.Context, m message) (string, error) {
	m.MessagingProduct, m.RecipientType = "whatsapp", "individual"
	if id, ok := strings.CutPrefix(m.To, GroupPrefix); ok {
		m.To, m.RecipientType = id, "group"
	}
	var out sent
	if err := c.call(ctx, http.MethodPost, "/messages", "", m, &out); err != nil {
		return "", err
	}
	if len(out.Messages) == 0 || out.Messages[0].ID == "" {
		return "", fmt.Errorf("whatsapp POST /{phone-number-id}/messages: the answer holds no message id")
	}
	return out.Messages[0].ID, nil
}

// SendText sends text (at most MaxTextLen) to the address to: a user's
// wa_id, or GroupPrefix and a group id.
func (c *Client) SendText(ctx context.Context, to, text string) (string, error) {
	return c.post(ctx, message{To: to, Type: "text", Text: &textBody{Body: text}})
}

// SendButtons sends text with up to MaxButtons reply buttons to a user;
// a group (whose messages hold no buttons) gets the text alone. The text is
// cut to MaxButtonBody and each label to MaxButtonTitle; a value longer
// than MaxButtonID, or more than MaxButtons buttons, is refused before
// any call, as a permanent error.
func (c *Client) SendButtons(ctx context.Context, to, text string, buttons []channel.Button) (string, error) {
	const name = "POST /{phone-number-id}/messages"
	if strings.HasPrefix(to, GroupPrefix) {
		return c.SendText(ctx, to, text)
	}
	if len(buttons) > MaxButtons {
		return "", &channel.Error{Platform: "whatsapp", Method: name, Permanent: true,
			Message: fmt.Sprintf("%d buttons; a WhatsApp message carries at most %d", len(buttons), MaxButtons)}
	}
	in := &interactive{Type: "button"}
	in.Body.Text = channel.Cut(text, MaxButtonBody)
	for _, b := range buttons {
		if b.Value == "" || len(b.Value) > MaxButtonID {
			return "", &channel.Error{Platform: "whatsapp", Method: name, Permanent: true,
				Message: fmt.Sprintf("a button's value is %d bytes; WhatsApp takes 1 to %d", len(b.Value), MaxButtonID)}
		}
		var rb replyButton
		rb.Type, rb.Reply.ID, rb.Reply.Title = "reply", b.Value, channel.Cut(b.Label, MaxButtonTitle)
		in.Action.Buttons = append(in.Action.Buttons, rb)
	}
	return c.post(ctx, message{To: to, Type: "interactive", Interactive: in})
}

// SendTemplate sends the approved message template name in language (a
// code such as en_US), which needs no open customer service window.
func (c *Client) SendTemplate(ctx context.Context, to, name, language string) (string, error) {
	t := &template{Name: name}
	t.Language.Code = language
	return c.post(ctx, message{To: to, Type: "template", Template: t})
}

// PhoneNumber is what GET /<phone number id> tells of the number.
type PhoneNumber struct {
	ID                 string `json:"id"`
	DisplayPhoneNumber string `json:"display_phone_number"`
	VerifiedName       string `json:"verified_name"`
	QualityRating      string `json:"quality_rating"`
}

// PhoneNumber reads the business phone number: it checks that the token
// may use the number.
func (c *Client) PhoneNumber(ctx context.Context) (PhoneNumber, error) {
	var p PhoneNumber
	err := c.call(ctx, http.MethodGet, "", "fields=id,display_phone_number,verified_name,quality_rating", nil, &p)
	return p, err
}
