// Package nettest gives tests network addresses with a fixed behaviour.
package nettest

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// RefusedURL returns an http:// URL on the loopback whose connections are
// refused until tb ends. The port is bound but not listening, so no other
// process can take it meanwhile, as one can the port of a closed server.
func RefusedURL(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatalf("socket: %v", err)
	}
	syscall.CloseOnExec(fd)
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatalf("bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatalf("getsockname: %v", err)
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
