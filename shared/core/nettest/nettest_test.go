package nettest

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
)

func TestRefusedURL(t *testing.T) {
	addr := strings.TrimPrefix(RefusedURL(t), "http://")
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Errorf("another listener took %s", addr)
	}
}
