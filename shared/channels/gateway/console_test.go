package gateway_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// fakeConsole answers its pages and API with what it was asked, and for
// which key.
type fakeConsole struct{}

func (fakeConsole) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte("page " + r.URL.Path))
}

func (fakeConsole) ServeAPI(w http.ResponseWriter, r *http.Request, k store.APIKey) {
	w.Write([]byte("api " + r.Method + " " + r.URL.Path + " for " + k.ID))
}

// TestConsoleMounted: the console's pages need no key; its API is behind
// the gateway's authentication, and gets the request's key.
func TestConsoleMounted(t *testing.T) {
	f := newFixture(t, func(c *gateway.Config) { c.Console = fakeConsole{} })
	type answer struct {
		Status int
		Body   string
	}
	tests := []struct {
		method, path, token string
		want                answer
	}{
		{"GET", "/", "", answer{200, "page /"}},
		{"GET", "/console/app.js", "", answer{200, "page /console/app.js"}},
		{"GET", "/v1/lambdaclaw/me", f.token, answer{200, "api GET /v1/lambdaclaw/me for k-full"}},
		{"DELETE", "/v1/lambdaclaw/keys/k1", f.token, answer{200, "api DELETE /v1/lambdaclaw/keys/k1 for k-full"}},
	}
	for _, tt := range tests {
		w := f.do(tt.method, tt.path, tt.token, "")
		if diff := cmp.Diff(tt.want, answer{w.Code, w.Body.String()}); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.method, tt.path, diff)
		}
	}
	for _, token := range []string{"", "lc_nope"} {
		if w := f.do("GET", "/v1/lambdaclaw/me", token, ""); w.Code != http.StatusUnauthorized {
			t.Errorf("GET /v1/lambdaclaw/me with key %q: %d, want 401", token, w.Code)
		}
	}
	// Without a console the root is not served.
	plain := newFixture(t)
	if w := plain.do("GET", "/", "", ""); w.Code != http.StatusNotFound {
		t.Errorf("GET / without a console: %d, want 404", w.Code)
	}
}
