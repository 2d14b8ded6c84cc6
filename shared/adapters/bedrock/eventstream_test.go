package bedrock

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/google/go-cmp/cmp"
)

// This file is the fake Bedrock runtime's encoder of the AWS event-stream
// binary format (application/vnd.amazon.eventstream), written from the
// format's description rather than taken from the SDK or awsapi, so that
// awsapi's decoder is tested against an independent encoder (which
// TestEncodeFrameMatchesSDK holds to the SDK's encoding). A message is:
//
//	prelude:  total length (uint32), headers length (uint32),
//	          CRC32 of those 8 bytes (uint32)
//	headers:  per header, name length (uint8), name, value type (uint8),
//	          and for a string (type 7) value length (uint16) and value
//	payload:  the event's JSON
//	trailer:  CRC32 of everything before it (uint32)
//
// Integers are big-endian and the CRC is CRC32 (IEEE).

// esHeader is an event-stream header with a string value.
type esHeader struct{ name, value string }

// esStringType is the event-stream header value type of strings.
const esStringType = 7

// encodeFrame encodes one event-stream message.
func encodeFrame(headers []esHeader, payload []byte) []byte {
	var hb bytes.Buffer
	for _, h := range headers {
		hb.WriteByte(byte(len(h.name)))
		hb.WriteString(h.name)
		hb.WriteByte(esStringType)
		hb.Write(binary.BigEndian.AppendUint16(nil, uint16(len(h.value))))
		hb.WriteString(h.value)
	}
	total := 12 + hb.Len() + len(payload) + 4
	frame := binary.BigEndian.AppendUint32(nil, uint32(total))
	frame = binary.BigEndian.AppendUint32(frame, uint32(hb.Len()))
	frame = binary.BigEndian.AppendUint32(frame, crc32.ChecksumIEEE(frame))
	frame = append(frame, hb.Bytes()...)
	frame = append(frame, payload...)
	return binary.BigEndian.AppendUint32(frame, crc32.ChecksumIEEE(frame))
}

// eventFrame is a ConverseStream event as Bedrock sends it, such as
// eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`).
func eventFrame(eventType, payload string) []byte {
	return encodeFrame([]esHeader{
		{":event-type", eventType},
		{":content-type", "application/json"},
		{":message-type", "event"},
	}, []byte(payload))
}

// exceptionFrame is an exception Bedrock sends in the middle of a stream,
// such as exceptionFrame("throttlingException", `{"message":"..."}`).
func exceptionFrame(exceptionType, payload string) []byte {
	return encodeFrame([]esHeader{
		{":exception-type", exceptionType},
		{":content-type", "application/json"},
		{":message-type", "exception"},
	}, []byte(payload))
}

// writeEventStream answers a ConverseStream call: status 200, Bedrock's
// content type, then each frame, flushed.
func writeEventStream(w http.ResponseWriter, frames ...[]byte) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Requestid", "req-stream")
	w.WriteHeader(http.StatusOK)
	for _, f := range frames {
		w.Write(f)
		w.(http.Flusher).Flush()
	}
}

// TestEncodeFrameVectors checks the encoder against the event-stream
// format's published test vectors (payload_no_headers and
// payload_one_str_header).
func TestEncodeFrameVectors(t *testing.T) {
	tests := []struct {
		name    string
		headers []esHeader
		want    string
	}{
		{"payload_no_headers", nil, "0000001d00000000fd528c5a7b27666f6f273a27626172277dc3653936"},
		{"payload_one_str_header", []esHeader{{"content-type", "application/json"}},
			"0000003d0000002007fd83960c636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b27666f6f273a27626172277d8d9c08b1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hex.EncodeToString(encodeFrame(tt.headers, []byte("{'foo':'bar'}"))); got != tt.want {
				t.Errorf("encodeFrame =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestEncodeFrameMatchesSDK checks that the SDK decodes the frames the fake
// sends, and that its own encoder makes the same bytes.
func TestEncodeFrameMatchesSDK(t *testing.T) {
	frames := map[string][]byte{
		"event":     eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"héllo"},"p":"abcdefgh"}`),
		"exception": exceptionFrame("throttlingException", `{"message":"Too many requests"}`),
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			msg, err := eventstream.NewDecoder().Decode(bytes.NewReader(frame), nil)
			if err != nil {
				t.Fatalf("SDK decoder: %v", err)
			}
			var sdk bytes.Buffer
			if err := eventstream.NewEncoder().Encode(&sdk, msg); err != nil {
				t.Fatalf("SDK encoder: %v", err)
			}
			if diff := cmp.Diff(sdk.Bytes(), frame); diff != "" {
				t.Errorf("frame differs from the SDK's encoding (-sdk +fake):\n%s", diff)
			}
			if got := msg.Headers.Get(":message-type"); got == nil || got.String() != name {
				t.Errorf(":message-type = %v, want %s", got, name)
			}
		})
	}
}
