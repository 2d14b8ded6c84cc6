package awsapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/google/go-cmp/cmp"
)

// sdkFrame is a message as the SDK's encoder makes it, with headers of
// every type besides the string ones given.
func sdkFrame(t *testing.T, strs map[string]string, payload string) []byte {
	t.Helper()
	var h eventstream.Headers
	h.Set("flag", eventstream.BoolValue(true))
	h.Set("off", eventstream.BoolValue(false))
	h.Set("b", eventstream.Int8Value(-3))
	h.Set("s", eventstream.Int16Value(300))
	h.Set("i", eventstream.Int32Value(70000))
	h.Set("l", eventstream.Int64Value(1<<40))
	h.Set("bytes", eventstream.BytesValue([]byte{0, 1, 2}))
	h.Set("when", eventstream.TimestampValue(time.Unix(1700000000, 0)))
	h.Set("id", eventstream.UUIDValue{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	for k, v := range strs {
		h.Set(k, eventstream.StringValue(v))
	}
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, eventstream.Message{Headers: h, Payload: []byte(payload)}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func event(t *testing.T, typ, payload string) []byte {
	return sdkFrame(t, map[string]string{":message-type": "event", ":event-type": typ, ":content-type": "application/json"}, payload)
}

// readAll reads every event of stream, and the error that ended it.
func readAll(s *EventStream) ([]Event, error) {
	var got []Event
	for {
		ev, err := s.Next()
		if err != nil {
			return got, err
		}
		got = append(got, Event{Type: ev.Type, Payload: bytes.Clone(ev.Payload)})
	}
}

// TestEventStream reads streams the SDK's encoder wrote, split across
// reads anywhere: events, the end between messages and inside one, an
// exception and an error, and messages whose framing is broken.
func TestEventStream(t *testing.T) {
	first, second := event(t, "contentBlockDelta", `{"delta":{"text":"Hé"}}`), event(t, "messageStop", `{"stopReason":"end_turn"}`)
	events := []Event{{"contentBlockDelta", []byte(`{"delta":{"text":"Hé"}}`)}, {"messageStop", []byte(`{"stopReason":"end_turn"}`)}}
	badCRC := bytes.Clone(second)
	badCRC[len(badCRC)-1] ^= 1
	for _, tc := range []struct {
		name   string
		stream []byte
		want   []Event
		err    error
		// errText is in the text of an error that is not err.
		errText string
	}{
		{"events", cat(first, second), events, io.EOF, ""},
		{"no events", nil, nil, io.EOF, ""},
		{"cut in a prelude", cat(first, second[:5]), events[:1], io.ErrUnexpectedEOF, ""},
		{"cut after a prelude", cat(first, second[:12]), events[:1], io.ErrUnexpectedEOF, ""},
		{"cut in a payload", cat(first, second[:len(second)-6]), events[:1], io.ErrUnexpectedEOF, ""},
		{"exception", cat(first, sdkFrame(t, map[string]string{":message-type": "exception", ":exception-type": "throttlingException"}, `{"message":"Too many tokens"}`), second),
			events[:1], &Error{Service: "Bedrock Runtime", Operation: "ConverseStream", Code: "ThrottlingException", Message: "Too many tokens"}, ""},
		{"error", sdkFrame(t, map[string]string{":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, ""),
			nil, &Error{Service: "Bedrock Runtime", Operation: "ConverseStream", Code: "InternalFailure", Message: "boom"}, ""},
		{"message checksum", cat(first, badCRC), events[:1], nil, "the message's checksum does not match"},
		{"prelude checksum", cat(first, append(binary.BigEndian.AppendUint32(nil, 16), make([]byte, 12)...)), events[:1], nil, "the prelude's checksum does not match"},
		{"shorter than a prelude", append(binary.BigEndian.AppendUint32(nil, 8), make([]byte, 12)...), nil, nil, "shorter than its prelude"},
	} {
		for name, split := range map[string]func(io.Reader) io.Reader{"whole": func(r io.Reader) io.Reader { return r }, "bytes": iotest.OneByteReader, "halves": iotest.HalfReader} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				s := newEventStream(bedrockRuntime, "ConverseStream", io.NopCloser(split(bytes.NewReader(tc.stream))))
				got, err := readAll(s)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				switch want := tc.err.(type) {
				case *Error:
					e, ok := errors.AsType[*Error](err)
					if !ok || !cmp.Equal(e, want) {
						t.Errorf("error %#v, want %#v", err, want)
					}
				case nil:
					if err == nil || !strings.Contains(err.Error(), tc.errText) {
						t.Errorf("error %v, want one saying %q", err, tc.errText)
					}
				default:
					if err != want {
						t.Errorf("error %v, want %v", err, want)
					}
				}
			})
		}
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestEventStreamBound refuses a message longer than the bound before
// reading past its prelude, and reads one of the bound.
func TestEventStreamBound(t *testing.T) {
	frame := event(t, "contentBlockDelta", strings.Repeat("x", 1000))
	s := newEventStream(bedrockRuntime, "ConverseStream", io.NopCloser(bytes.NewReader(frame)))
	s.maxLen = int64(len(frame))
	if got, err := readAll(s); len(got) != 1 || err != io.EOF {
		t.Errorf("a message of the bound: %d events, %v", len(got), err)
	}
	// The prelude, then a reader that fails the test if read.
	s = newEventStream(bedrockRuntime, "ConverseStream", io.NopCloser(io.MultiReader(bytes.NewReader(frame[:12]), iotest.ErrReader(errors.New("read past the prelude")))))
	s.maxLen = int64(len(frame)) - 1
	_, err := s.Next()
	if big, ok := errors.AsType[*TooLargeError](err); !ok || big.Limit != int64(len(frame))-1 || big.Status != http.StatusOK {
		t.Errorf("a message over the bound: %v, want a *TooLargeError", err)
	}
}

// TestBedrockRuntime checks the requests of Bedrock Runtime's
// operations: the model id escaped in the path, the content types asked
// for, a streamed answer read as events and a refused one as an *Error.
func TestBedrockRuntime(t *testing.T) {
	type call struct{ path, contentType, accept, body string }
	var calls []call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if msg := verify(r, body, "bedrock", "eu-west-1"); msg != "" {
			t.Error(msg)
		}
		calls = append(calls, call{r.URL.EscapedPath(), r.Header.Get("Content-Type"), r.Header.Get("Accept"), string(body)})
		switch {
		case strings.HasSuffix(r.URL.Path, "/converse-stream") && strings.Contains(r.URL.Path, "refused"):
			w.Header().Set("X-Amzn-Errortype", "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"message":"You don't have access to the model"}`)
		case strings.HasSuffix(r.URL.Path, "/converse-stream"):
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
			w.Write(event(t, "messageStop", `{"stopReason":"end_turn"}`))
		default:
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	defer srv.Close()
	b, err := NewBedrockRuntime(testConfig("eu-west-1"), srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out, err := b.Converse(ctx, "anthropic.claude:0", []byte(`{"messages":[]}`)); err != nil || string(out) != `{"ok":true}` {
		t.Errorf("Converse = %s, %v", out, err)
	}
	if out, err := b.InvokeModel(ctx, "arn:aws:bedrock:eu-west-1::foundation-model/amazon.titan-embed-text-v2:0", "application/json", "*/*", []byte(`{}`)); err != nil || string(out) != `{"ok":true}` {
		t.Errorf("InvokeModel = %s, %v", out, err)
	}
	s, err := b.ConverseStream(ctx, "eu.model:1", []byte(`{}`))
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	if got, err := readAll(s); len(got) != 1 || got[0].Type != "messageStop" || err != io.EOF {
		t.Errorf("the stream: %v, %v", got, err)
	}
	s.Close()
	_, err = b.ConverseStream(ctx, "refused", []byte(`{}`))
	if Code(err) != "AccessDeniedException" || Status(err) != http.StatusForbidden {
		t.Errorf("a refused stream: %v", err)
	}
	want := []call{
		{"/model/anthropic.claude%3A0/converse", "application/json", "application/json", `{"messages":[]}`},
		{"/model/arn%3Aaws%3Abedrock%3Aeu-west-1%3A%3Afoundation-model%2Famazon.titan-embed-text-v2%3A0/invoke", "application/json", "*/*", `{}`},
		{"/model/eu.model%3A1/converse-stream", "application/json", "application/vnd.amazon.eventstream", `{}`},
		{"/model/refused/converse-stream", "application/json", "application/vnd.amazon.eventstream", `{}`},
	}
	if diff := cmp.Diff(want, calls, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
