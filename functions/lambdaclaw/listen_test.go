package main

import (
	"net"
	"os"
	"strconv"
	"testing"
)

// TestListenSocketActivation checks the socket activation variables: a
// LISTEN_PID naming another process is ignored, a count other than one
// socket is refused, and the variables are not passed on.
func TestListenSocketActivation(t *testing.T) {
	tests := []struct {
		name, pid, fds, wantErr string
	}{
		{"for another process", "1", "1", ""},
		{"two sockets", strconv.Itoa(os.Getpid()), "2", `socket activation: LISTEN_FDS="2", want one socket`},
		{"no count", strconv.Itoa(os.Getpid()), "", `socket activation: LISTEN_FDS="", want one socket`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LISTEN_PID", tt.pid)
			t.Setenv("LISTEN_FDS", tt.fds)
			ln, err := listen("127.0.0.1:0")
			if ln != nil {
				defer ln.Close()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("listen: %v", err)
			case tt.wantErr == "":
				if _, ok := ln.Addr().(*net.TCPAddr); !ok {
					t.Errorf("listener on %v, want a TCP address", ln.Addr())
				}
			case err == nil || err.Error() != tt.wantErr:
				t.Errorf("listen error = %v, want %q", err, tt.wantErr)
			}
			if tt.wantErr != "" && (os.Getenv("LISTEN_PID") != "" || os.Getenv("LISTEN_FDS") != "") {
				t.Error("the socket activation variables were passed on")
			}
		})
	}
}
