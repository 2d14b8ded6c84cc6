package bench

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// lambdas are the Lambda functions the stack deploys (functions/<name>).
var lambdas = []string{"api", "ws", "step", "scheduler", "telegram", "indexer", "sandbox"}

// buildStripped builds ./functions/<name> stripped for goarch into dir and
// returns its path; a Lambda function as `make build` does (lambda.norpc).
func buildStripped(tb testing.TB, dir, name, goarch string) string {
	tb.Helper()
	out := filepath.Join(dir, name+"-"+goarch)
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", out, "./functions/"+name)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s for %s: %v\n%s", name, goarch, err, b)
	}
	return out
}

func mib(tb testing.TB, path string) float64 {
	tb.Helper()
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return float64(st.Size()) / (1 << 20)
}

// BenchmarkFootprint reports what the budgets of tests/bench/README.md bound: the
// stripped lambdaclaw binary (this machine's architecture), the time from
// exec to a healthy /health on a fresh home (median), the resident memory
// one second after start, each Lambda bootstrap's stripped size for
// linux/arm64 (what the stack deploys), and the cold init of the api
// function: from exec to its first invocation (GET /health) answered,
// through a fake Lambda runtime API, with its workspaces in a local S3.
func BenchmarkFootprint(b *testing.B) {
	llm := fakellm.New()
	defer llm.Close()
	b.ReportMetric(mib(b, binary), "lambdaclaw_MiB")

	var starts []time.Duration
	var rss float64
	for range b.N {
		srv, d := start(b, b.TempDir(), llm.URL)
		starts = append(starts, d)
		time.Sleep(time.Second)
		rss = max(rss, rssKB(b, srv.cmd.Process.Pid)/1024)
		srv.stop()
	}
	slices.Sort(starts)
	b.ReportMetric(ms(pct(starts, .5)), "start_healthy_p50_ms")
	b.ReportMetric(rss, "idle_rss_MiB")

	dir := b.TempDir()
	for _, fn := range lambdas {
		b.ReportMetric(mib(b, buildStripped(b, dir, fn, "arm64")), fn+"_arm64_MiB")
	}
	api := buildStripped(b, dir, "api", runtimeArch())
	// The workspace bucket: the first start creates the agents'
	// workspaces in it, as a deployment's first invocation does.
	s3Endpoint, bucket := cloudtest.S3(b)
	coldInit(b, api, llm.URL, s3Endpoint, bucket)
	var inits []time.Duration
	for range b.N {
		inits = append(inits, coldInit(b, api, llm.URL, s3Endpoint, bucket))
	}
	slices.Sort(inits)
	b.ReportMetric(ms(pct(inits, .5)), "api_cold_init_p50_ms")
}

// runtimeArch is the GOARCH of this machine, for binaries run here.
func runtimeArch() string {
	if a := os.Getenv("GOHOSTARCH"); a != "" {
		return a
	}
	out, err := exec.Command("go", "env", "GOHOSTARCH").Output()
	if err != nil {
		return "amd64"
	}
	return string(out[:len(out)-1])
}

// coldInit runs the api bootstrap against a fake Lambda runtime API that
// hands it one GET /health, and returns the time from exec to its answer.
func coldInit(tb testing.TB, bootstrap, llmURL, s3Endpoint, bucket string) time.Duration {
	tb.Helper()
	event, err := os.ReadFile("../../events/api/health.json")
	if err != nil {
		tb.Fatal(err)
	}
	answered := make(chan error, 1)
	var served atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		if served.Swap(true) {
			<-r.Context().Done() // one invocation only
			return
		}
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", "cold-init")
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:api")
		w.Write(event)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/cold-init/response", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
		select {
		case answered <- nil:
		default:
		}
	})
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		select {
		case answered <- fmt.Errorf("%s: %s", r.URL.Path, b):
		default:
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	cmd := exec.Command(bootstrap)
	cmd.Env = []string{
		"AWS_LAMBDA_RUNTIME_API=" + ln.Addr().String(), "AWS_LAMBDA_FUNCTION_NAME=api", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"TABLE_NAME=bench", "STATE_MACHINE_ARN=arn:aws:states:us-east-1:123456789012:stateMachine:bench",
		"WORKSPACE_BUCKET=" + bucket, "S3_ENDPOINT=" + s3Endpoint, "DEFAULT_PROVIDER=openai", "OPENAI_BASE_URL=" + llmURL + "/v1",
		"OPENAI_MODEL=fake-model", "OPENAI_API_KEY=sk-fake", "LOG_LEVEL=error",
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	select {
	case err := <-answered:
		if err != nil {
			tb.Fatalf("the api function did not answer GET /health: %v\n%s", err, stderr.Bytes())
		}
		return time.Since(begin)
	case <-time.After(30 * time.Second):
		tb.Fatalf("the api function did not answer within 30 s\n%s", stderr.Bytes())
		return 0
	}
}
