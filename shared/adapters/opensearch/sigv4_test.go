package opensearch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// testCredentials are static, made-up credentials with a session token,
// as a Lambda role's are.
var testCredentials = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-example")

var authRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/([a-z0-9-]+)/([a-z]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

func TestSigV4(t *testing.T) {
	for _, tc := range []struct {
		name       string
		serverless bool
		service    string
	}{
		{"managed domain", false, "es"},
		{"serverless collection", true, "aoss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, exchange{"POST", "/mem-test/_search", 200, "resp_search_head.json"})
			x := c.index(t, func(cfg *Config) {
				cfg.Region = "us-west-2"
				cfg.Serverless = tc.serverless
				cfg.Credentials = testCredentials
			})
			if _, err := x.Get(context.Background(), "ada", "", "notes/pets"); err != nil {
				t.Fatalf("Get: %v", err)
			}
			r := c.requests()[0]
			auth := r.header.Get("Authorization")
			m := authRE.FindStringSubmatch(auth)
			if m == nil {
				t.Fatalf("Authorization = %q, not a SigV4 header for AKIDEXAMPLE", auth)
			}
			if m[2] != "us-west-2" || m[3] != tc.service {
				t.Errorf("credential scope region %q service %q, want us-west-2 %s", m[2], m[3], tc.service)
			}
			amzDate := r.header.Get("X-Amz-Date")
			if !strings.HasPrefix(amzDate, m[1]) {
				t.Errorf("X-Amz-Date %q does not match the scope date %s", amzDate, m[1])
			}
			sum := sha256.Sum256(r.body)
			if got := r.header.Get("X-Amz-Content-Sha256"); got != hex.EncodeToString(sum[:]) {
				t.Errorf("X-Amz-Content-Sha256 = %q, want the body's digest (Serverless refuses requests without it)", got)
			}
			if got := r.header.Get("X-Amz-Security-Token"); got != "session-token-example" {
				t.Errorf("X-Amz-Security-Token = %q", got)
			}
			for _, h := range []string{"host", "x-amz-content-sha256", "x-amz-date", "x-amz-security-token"} {
				if !strings.Contains(";"+m[4]+";", ";"+h+";") {
					t.Errorf("SignedHeaders %q lacks %s", m[4], h)
				}
			}
			// Sign the request as received again: the same signature means
			// nothing signed was changed after signing.
			if want := resign(t, c.srv.URL, r, m[4], tc.service, amzDate); want != m[5] {
				t.Errorf("signature %s, recomputed %s: the request changed after it was signed", m[5], want)
			}
		})
	}
}

// resign signs a copy of r carrying only its signed headers and returns
// the signature.
func resign(t *testing.T, base string, r request, signed, service, amzDate string) string {
	t.Helper()
	u := base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequest(r.method, u, bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range strings.Split(signed, ";") {
		if h != "host" {
			req.Header[http.CanonicalHeaderKey(h)] = r.header.Values(h)
		}
	}
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := testCredentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, r.header.Get("X-Amz-Content-Sha256"), service, "us-west-2", at); err != nil {
		t.Fatal(err)
	}
	m := authRE.FindStringSubmatch(req.Header.Get("Authorization"))
	if m == nil {
		t.Fatalf("re-signed Authorization %q", req.Header.Get("Authorization"))
	}
	return m[5]
}

func TestUnsigned(t *testing.T) {
	c := newCluster(t, exchange{"POST", "/mem-test/_search", 200, "resp_search_empty.json"})
	x := c.index(t, nil)
	if _, err := x.Keyword(context.Background(), "ada", "", "cat", memory.Filter{}, 3); err != nil {
		t.Fatal(err)
	}
	r := c.requests()[0]
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Content-Sha256"} {
		if v := r.header.Get(h); v != "" {
			t.Errorf("unsigned request carries %s: %q", h, v)
		}
	}
}
