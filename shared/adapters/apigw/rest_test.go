package apigw

import (
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
)

func TestStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.HandlerFunc
		status  int
		headers map[string]string
		cookies []string
		body    string
	}{
		{
			name: "request reaches the handler",
			h: func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Header().Add("X-Path", r.URL.Path+"?"+r.URL.RawQuery)
				w.Header().Add("Vary", "A")
				w.Header().Add("Vary", "B")
				w.Header().Add("Set-Cookie", "a=1")
				w.Header().Set("X-Auth", r.Header.Get("Authorization"))
				w.WriteHeader(http.StatusCreated)
				w.(http.Flusher).Flush()
				w.Write(b)
			},
			status:  http.StatusCreated,
			headers: map[string]string{"X-Path": "/v1/x?q=1", "Vary": "A,B", "X-Auth": "Bearer k"},
			cookies: []string{"a=1"},
			body:    "hello",
		},
		{name: "nothing written", h: func(http.ResponseWriter, *http.Request) {}, status: http.StatusOK},
		{
			name:    "panic before output",
			h:       func(http.ResponseWriter, *http.Request) { panic("boom") },
			status:  http.StatusInternalServerError,
			headers: map[string]string{"Content-Type": "application/json"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := events.APIGatewayProxyRequest{
				HTTPMethod: "POST", Path: "/v1/x", Body: "aGVsbG8=", IsBase64Encoded: true,
				Headers:                         map[string]string{"Authorization": "Bearer k"},
				MultiValueQueryStringParameters: map[string][]string{"q": {"1"}},
			}
			resp, err := Stream(tc.h, nil)(t.Context(), ev)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(body) != tc.body {
				t.Errorf("= %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if diff := cmp.Diff(tc.headers, resp.Headers); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cookies, resp.Cookies); diff != "" {
				t.Errorf("cookies (-want +got):\n%s", diff)
			}
		})
	}
}
