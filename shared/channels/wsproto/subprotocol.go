package wsproto

import "strings"

// Browsers cannot set headers on a WebSocket, so a browser client (the
// web console) passes its API key as a subprotocol instead of the
// Authorization header:
//
//	new WebSocket(url, ["lambdaclaw", "lambdaclaw.key." + key])
//
// The server picks Subprotocol, never echoing the key. Unlike a query
// parameter, the header stays out of URLs, access logs and history.
const (
	// Subprotocol is the subprotocol a server selects.
	Subprotocol = "lambdaclaw"
	// KeyProtocolPrefix starts the subprotocol that carries a key.
	KeyProtocolPrefix = "lambdaclaw.key."
)

// KeyFromProtocols returns the key carried in the Sec-WebSocket-Protocol
// header values offered by a client, which must offer Subprotocol too;
// ok is false when there is none.
func KeyFromProtocols(values []string) (key string, ok bool) {
	var offered bool
	for _, v := range values {
		for p := range strings.SplitSeq(v, ",") {
			p = strings.TrimSpace(p)
			if p == Subprotocol {
				offered = true
			} else if k, found := strings.CutPrefix(p, KeyProtocolPrefix); found && k != "" {
				key = k
			}
		}
	}
	return key, offered && key != ""
}
