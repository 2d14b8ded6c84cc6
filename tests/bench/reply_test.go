package bench

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// hugeReply is the size of the reply BenchmarkHugeReply has the fake LLM
// send: far over the default 1 MiB reply limit.
const hugeReply = 64 << 20

// BenchmarkHugeReply reports the server's peak memory (VmHWM) when the
// model sends a 64 MB reply, streamed and not, against a server started
// for each case: the peak once idle after one small request, and after
// the huge replies. The reply limit keeps the difference to a few
// megabytes: a streamed reply is cut at the limit (the gateway answers
// 200 with 1 MiB of content), a completion is read only up to its bound
// (the gateway answers 502).
//
//	go test ./tests/bench -run '^$' -bench HugeReply -benchtime 3x
func BenchmarkHugeReply(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			f := setup(b)
			pid := f.srv.cmd.Process.Pid
			gw := "http://" + f.srv.addr + "/v1/chat/completions"
			post(b, f.client, gw, f.srv.key, "default", stream, false)
			idle := procStatusKB(b, pid, "VmHWM") / 1024
			f.llm.SetDefault(func(fakellm.Request) fakellm.Reply {
				return fakellm.Reply{Generated: hugeReply, ChunkSize: 256}
			})
			b.ResetTimer()
			var status int
			var got int64
			for range b.N {
				status, got = postHuge(b, f.client, gw, f.srv.key, stream)
			}
			b.StopTimer()
			peak := procStatusKB(b, pid, "VmHWM") / 1024
			b.ReportMetric(idle, "idle_peak_rss_MB")
			b.ReportMetric(peak, "peak_rss_MB")
			b.ReportMetric(peak-idle, "growth_MB")
			b.ReportMetric(float64(got)/(1<<20), "answer_MB")
			b.ReportMetric(float64(status), "status")
		})
	}
}

// postHuge sends one completion and reads the whole answer, returning its
// status and length.
func postHuge(b *testing.B, client *http.Client, url, key string, stream bool) (int, int64) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(body, "default", map[bool]string{true: `,"stream":true`}[stream])))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return resp.StatusCode, n
}
