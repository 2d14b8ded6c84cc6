// Package bench measures what the gateway costs: the overhead it adds to a
// completion and to the first streamed byte, its startup time and its
// memory. Every figure is measured against the real binary and a fake LLM
// that answers instantly, in the same run, so the overhead is the gateway's
// time minus the time of the same request sent straight to the fake.
//
//	make bench
package bench

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmark asked for: nothing to build
	}
	dir, err := os.MkdirTemp("", "lambdaclaw-bench")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lambdaclaw")
	// As `make build` does: statically linked, without cgo.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, "./functions/lambdaclaw")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running lambdaclaw.
type server struct {
	cmd  *exec.Cmd
	addr string
	key  string
}

func freeAddr(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func env(home, llmURL string) []string {
	return append(os.Environ(), "LAMBDACLAW_HOME="+home, "OPENAI_BASE_URL="+llmURL+"/v1",
		"OPENAI_API_KEY=bench-provider-key", "OPENAI_MODEL=fake-model")
}

// start runs the binary and returns once /health answers, with the time
// that took.
func start(tb testing.TB, home, llmURL string) (*server, time.Duration) {
	tb.Helper()
	addr := freeAddr(tb)
	cmd := exec.Command(binary, "serve", "--addr", addr)
	cmd.Env = env(home, llmURL)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return &server{cmd: cmd, addr: addr}, time.Since(begin)
			}
		}
		if time.Since(begin) > 10*time.Second {
			cmd.Process.Kill()
			tb.Fatal("server did not become healthy")
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
}

// rssKB reads the resident set size of pid from /proc.
func rssKB(tb testing.TB, pid int) float64 { return procStatusKB(tb, pid, "VmRSS") }

// procStatusKB reads a figure in kB of pid from /proc, such as VmRSS or
// VmHWM (the peak resident set size).
func procStatusKB(tb testing.TB, pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return v
		}
	}
	tb.Fatal("no " + field)
	return 0
}

func createKey(tb testing.TB, home, llmURL string) string {
	cmd := exec.Command(binary, "keys", "create", "--name", "bench", "--autonomy", "full", "--rate", "100000000")
	cmd.Env = env(home, llmURL)
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("keys create: %v", err)
	}
	return strings.TrimSpace(string(out))
}

const body = `{"model":"%s","messages":[{"role":"user","content":"hello there"}]%s}`

// post sends one completion and returns its latency to the end of the body
// (or to the first byte of the body when ttfb is set).
func post(tb testing.TB, client *http.Client, url, key, model string, stream, ttfb bool) time.Duration {
	extra := ""
	if stream {
		extra = `,"stream":true`
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(body, model, extra)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	begin := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		tb.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ttfb {
		r := bufio.NewReader(resp.Body)
		if _, err := r.ReadByte(); err != nil {
			tb.Fatal(err)
		}
		d := time.Since(begin)
		io.Copy(io.Discard, r)
		return d
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	if stream && !bytes.Contains(b, []byte("[DONE]")) {
		tb.Fatalf("stream did not end: %s", b)
	}
	return time.Since(begin)
}

// measure sends n requests from conc goroutines and returns the sorted
// latencies.
func measure(tb testing.TB, n, conc int, do func() time.Duration) []time.Duration {
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for range work {
				d := do()
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	return lat
}

func pct(lat []time.Duration, p float64) time.Duration {
	return lat[int(float64(len(lat)-1)*p)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type fixture struct {
	llm    *fakellm.Server
	srv    *server
	client *http.Client
}

func setup(b *testing.B) *fixture {
	llm := fakellm.New()
	b.Cleanup(llm.Close)
	home := b.TempDir()
	key := createKey(b, home, llm.URL)
	srv, _ := start(b, home, llm.URL)
	srv.key = key
	b.Cleanup(srv.stop)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return &fixture{llm: llm, srv: srv, client: client}
}

// BenchmarkCompletion reports the gateway's overhead on a non-streaming
// stateless completion at concurrency 1 and 16, and the server's memory
// when idle and after the load.
func BenchmarkCompletion(b *testing.B) {
	f := setup(b)
	time.Sleep(500 * time.Millisecond)
	idle := rssKB(b, f.srv.cmd.Process.Pid) / 1024
	gw := "http://" + f.srv.addr + "/v1/chat/completions"
	direct := f.llm.URL + "/v1/chat/completions"
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			// Warm both paths: connections, caches.
			measure(b, 50, conc, func() time.Duration { return post(b, f.client, direct, "x", "fake-model", false, false) })
			measure(b, 50, conc, func() time.Duration { return post(b, f.client, gw, f.srv.key, "default", false, false) })
			b.ResetTimer()
			d := measure(b, b.N, conc, func() time.Duration { return post(b, f.client, direct, "x", "fake-model", false, false) })
			g := measure(b, b.N, conc, func() time.Duration { return post(b, f.client, gw, f.srv.key, "default", false, false) })
			b.ReportMetric(ms(pct(g, .5)-pct(d, .5)), "overhead_p50_ms")
			b.ReportMetric(ms(pct(g, .99)-pct(d, .99)), "overhead_p99_ms")
			b.ReportMetric(ms(pct(g, .5)), "gateway_p50_ms")
			b.ReportMetric(ms(pct(d, .5)), "direct_p50_ms")
		})
	}
	b.Run("memory", func(b *testing.B) {
		b.ReportMetric(idle, "idle_rss_MB")
		b.ReportMetric(rssKB(b, f.srv.cmd.Process.Pid)/1024, "loaded_rss_MB")
	})
}

// BenchmarkStreamTTFB reports the overhead the gateway adds to the time to
// the first byte of a streamed completion.
func BenchmarkStreamTTFB(b *testing.B) {
	f := setup(b)
	gw := "http://" + f.srv.addr + "/v1/chat/completions"
	direct := f.llm.URL + "/v1/chat/completions"
	measure(b, 50, 1, func() time.Duration { return post(b, f.client, direct, "x", "fake-model", true, true) })
	measure(b, 50, 1, func() time.Duration { return post(b, f.client, gw, f.srv.key, "default", true, true) })
	b.ResetTimer()
	d := measure(b, b.N, 1, func() time.Duration { return post(b, f.client, direct, "x", "fake-model", true, true) })
	g := measure(b, b.N, 1, func() time.Duration { return post(b, f.client, gw, f.srv.key, "default", true, true) })
	b.ReportMetric(ms(pct(g, .5)-pct(d, .5)), "ttfb_overhead_p50_ms")
	b.ReportMetric(ms(pct(g, .99)-pct(d, .99)), "ttfb_overhead_p99_ms")
}

// BenchmarkStartup reports the time from exec to a healthy /health, on an
// existing data directory (the first start, which creates it, is not
// counted).
func BenchmarkStartup(b *testing.B) {
	llm := fakellm.New()
	defer llm.Close()
	home := b.TempDir()
	srv, _ := start(b, home, llm.URL)
	srv.stop()
	b.ResetTimer()
	var all []time.Duration
	for range b.N {
		srv, d := start(b, home, llm.URL)
		all = append(all, d)
		b.StopTimer()
		srv.stop()
		b.StartTimer()
	}
	slices.Sort(all)
	b.ReportMetric(ms(pct(all, .5)), "startup_p50_ms")
	b.ReportMetric(ms(all[len(all)-1]), "startup_max_ms")
}

// cpuSeconds reads the user plus system CPU time pid has used.
func cpuSeconds(tb testing.TB, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks; USER_HZ is 100 on Linux
}

// postTurn sends one non-streaming completion, stateful when session is
// set, and reports anything but 200 as an error (it runs on the goroutines
// of measure, where tb.Fatal must not be called).
func postTurn(tb testing.TB, client *http.Client, url, key, session string) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(body, "default", "")))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("X-Lambdaclaw-Session-Key", session)
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Error(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Errorf("status %d: %s", resp.StatusCode, b)
	}
}

// BenchmarkThroughput reports requests per second at concurrency 16 and
// the gateway's CPU time per turn (its own user+system time, read from
// /proc, divided by the turns it answered), for stateless requests and
// for stateful ones spread over 48 sessions.
func BenchmarkThroughput(b *testing.B) {
	f := setup(b)
	gw := "http://" + f.srv.addr + "/v1/chat/completions"
	pid := f.srv.cmd.Process.Pid
	for _, mode := range []string{"stateless", "stateful"} {
		b.Run(mode, func(b *testing.B) {
			var mu sync.Mutex
			i := 0
			session := func() string {
				if mode == "stateless" {
					return ""
				}
				mu.Lock()
				defer mu.Unlock()
				i++
				return fmt.Sprintf("bench-%d", i%48)
			}
			measure(b, 100, 16, func() time.Duration { postTurn(b, f.client, gw, f.srv.key, session()); return 0 })
			cpu0 := cpuSeconds(b, pid)
			b.ResetTimer()
			begin := time.Now()
			measure(b, b.N, 16, func() time.Duration { postTurn(b, f.client, gw, f.srv.key, session()); return 0 })
			elapsed := time.Since(begin)
			b.StopTimer()
			cpu := cpuSeconds(b, pid) - cpu0
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			b.ReportMetric(cpu*1000/float64(b.N), "cpu_ms/turn")
			b.ReportMetric(rssKB(b, pid)/1024, "rss_MB")
		})
	}
}
