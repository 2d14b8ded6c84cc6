package agent

import (
	"strings"
	"testing"
)

func TestCheckSessionKey(t *testing.T) {
	for _, c := range []struct {
		name, sk, wantErr string
	}{
		{"plain", "user-1", ""},
		{"unicode", "Zoë/日本語 🙂", ""},
		{"spaces", "my project", ""},
		{"longest", strings.Repeat("k", MaxSessionKey), ""},
		{"too long", strings.Repeat("k", MaxSessionKey+1), "key is longer than 256 bytes"},
		{"a tab", "a\tb", "key has a control character (U+0009 at byte 1)"},
		{"a line break", "a\nb", "U+000A"},
		{"NUL", "\x00", "U+0000"},
		{"DEL", "a\x7f", "U+007F"},
		{"a C1 control", "a\u0085", "U+0085"},
		{"invalid UTF-8", "a\xffb", "key is not valid UTF-8"},
		{"a lone surrogate's bytes", "\xed\xa0\x80", "not valid UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckSessionKey("key", c.sk)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("CheckSessionKey(%q) = %v, want nil", c.sk, err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("CheckSessionKey(%q) = %v, want an error with %q", c.sk, err, c.wantErr)
			}
		})
	}
}
