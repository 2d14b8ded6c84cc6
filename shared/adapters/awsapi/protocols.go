package awsapi

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// callJSON calls op of an awsJson service with in as its JSON body and
// decodes the answer into out (when not nil).
func (c *Client) callJSON(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.svc.Name, op, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-"+c.svc.jsonVersion)
	h.Set("X-Amz-Target", c.svc.target+"."+op)
	if c.svc.queryCompatible {
		h.Set("X-Amzn-Query-Mode", "true")
	}
	res, err := c.do(ctx, request{op: op, method: http.MethodPost, path: "/", header: h, body: body})
	if err != nil {
		return err
	}
	return c.decode(op, res.body, out)
}

// decode reads a JSON answer into out (when not nil).
func (c *Client) decode(op string, body []byte, out any) error {
	if out == nil || len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: the answer: %w", c.svc.Name, op, err)
	}
	return nil
}

// callQuery calls the query protocol's action with params and decodes
// the XML answer into out.
func (c *Client) callQuery(ctx context.Context, action string, params url.Values, out any) error {
	form := url.Values{"Action": {action}, "Version": {c.svc.version}}
	for k, v := range params {
		form[k] = v
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	res, err := c.do(ctx, request{op: action, method: http.MethodPost, path: "/", header: h, body: []byte(form.Encode())})
	if err != nil {
		return err
	}
	if err := xml.Unmarshal(res.body, out); err != nil {
		return fmt.Errorf("%s %s: the answer: %w", c.svc.Name, action, err)
	}
	return nil
}

// escapeLabel escapes a restJson1 URI label as the SDK does: every byte
// but the unreserved ones (RFC 3986) percent-encoded.
func escapeLabel(s string) string { return percentEncode(s, "-_.~") }

// percentEncode percent-encodes every byte of s but letters, digits and
// those in keep.
func percentEncode(s, keep string) string {
	var b strings.Builder
	for i := range len(s) {
		ch := s[i]
		if 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z' || '0' <= ch && ch <= '9' || strings.IndexByte(keep, ch) >= 0 {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}
