package scrub

import (
	"strings"
	"testing"
	"time"
)

func TestZZAdversarial(t *testing.T) {
	for name, in := range map[string]string{
		"prose 1MB":          strings.Repeat("The quick brown fox jumps over the lazy dog and keeps running. ", 16000),
		"open quote 200KB":   `password: "` + strings.Repeat("abc ", 50000),
		"token token 60KB":   strings.Repeat("token ", 10000),
		"pem open 100KB":     "-----BEGIN PRIVATE KEY-----\n" + strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n", 3000),
		"begin cert 100KB":   strings.Repeat("-----BEGIN CERTIFICATE-----\nMIIEvQIBADANBgk\n-----END CERTIFICATE-----\n", 1500),
		"no space 300KB":     strings.Repeat("x", 300000),
	} {
		start := time.Now()
		s := NewStream(func(string) {})
		for i := 0; i < len(in); i += 4 {
			s.Write(in[i:min(i+4, len(in))])
		}
		s.Flush()
		t.Logf("%-20s %v", name, time.Since(start))
	}
}
