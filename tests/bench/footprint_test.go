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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// lambdas are the Lambda functions the stack deploys (functions/<name>).
var lambdas = []string{"api", "ws", "step", "scheduler", "telegram", "channels", "indexer", "sandbox"}

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
// linux/arm64 (what the stack deploys), and the cold init of each Lambda
// function that serves requests: from exec to its first invocation
// answered (coldInit), through a fake Lambda runtime API, with its
// workspaces in a local S3.
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
	// The workspace bucket: the first start creates the agents'
	// workspaces in it, as a deployment's first invocation does.
	s3Endpoint, bucket := cloudtest.S3(b)
	env := []string{"WORKSPACE_BUCKET=" + bucket, "S3_ENDPOINT=" + s3Endpoint}
	for _, c := range coldInits {
		bootstrap := buildStripped(b, dir, c.function, runtimeArch())
		if c.models {
			c.env = append(c.env, "DEFAULT_PROVIDER=openai", "OPENAI_BASE_URL="+llm.URL+"/v1", "OPENAI_MODEL=fake-model", "OPENAI_API_KEY=sk-fake")
		}
		coldInit(b, bootstrap, c, env)
		var inits []time.Duration
		for range b.N {
			inits = append(inits, coldInit(b, bootstrap, c, env))
		}
		slices.Sort(inits)
		b.ReportMetric(ms(pct(inits, .5)), c.function+"_cold_init_p50_ms")
	}
}

// coldInitCase is a Lambda function's first invocation: an event it
// answers without calling AWS, and the environment the stack gives it
// (shared/wiring/cloud), but for its endpoints.
type coldInitCase struct {
	function string
	event    string // a file under events/, or the event itself
	env      []string
	// wantErr is part of the error the function answers the event with;
	// "" when it answers with a response.
	wantErr string
	// models gives the function the model provider, as the stack gives
	// those that run turns.
	models bool
}

// coldInits are the functions whose cold init the benchmark measures.
// step's init syncs the heartbeats' jobs: one DynamoDB request, which the
// fake runtime API's DynamoDB answers "no such table" (the function logs
// it and starts).
var coldInits = []coldInitCase{
	{function: "api", event: "api/health.json", models: true, env: []string{"STEP_TIMEOUT=15m0s"}},
	{function: "ws", event: `{"requestContext":{"routeKey":"$connect","connectionId":"bench"}}`,
		env: []string{"WS_ENDPOINT=https://ws.example.com/prod"}},
	{function: "step", event: `{"action":"bench","state":{}}`, wantErr: `unknown action \"bench\"`, models: true,
		env: []string{"STEP_TIMEOUT=15m0s", "WS_ENDPOINT=https://ws.example.com/prod"}},
	{function: "scheduler", event: `{}`, wantErr: "user and channel are required"},
	{function: "telegram", event: "telegram/webhook-no-secret.json",
		env: []string{"TELEGRAM_BOT_TOKEN=123456:bench", "TELEGRAM_API_BASE=http://127.0.0.1:1"}},
	// A webhook of no channel's route: 404, without a channel's secret.
	{function: "channels", event: `{"resource":"/channels/{proxy+}","path":"/channels/none/events","httpMethod":"POST","headers":{},"body":""}`},
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

// coldInit runs the bootstrap of c's function against a fake Lambda
// runtime API that hands it c's event, and returns the time from exec to
// its answer. The same server is the function's DynamoDB endpoint, which
// answers every request that the table does not exist.
func coldInit(tb testing.TB, bootstrap string, c coldInitCase, env []string) time.Duration {
	tb.Helper()
	event := []byte(c.event)
	if !strings.HasPrefix(c.event, "{") {
		var err error
		if event, err = os.ReadFile("../../events/" + c.event); err != nil {
			tb.Fatal(err)
		}
	}
	answered := make(chan error, 1)
	answer := func(err error) {
		select {
		case answered <- err:
		default:
		}
	}
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
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:"+c.function)
		w.Write(event)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/cold-init/{outcome}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		switch outcome := r.PathValue("outcome"); {
		case outcome == "response" && c.wantErr == "":
			answer(nil)
		case outcome == "error" && c.wantErr != "" && bytes.Contains(body, []byte(c.wantErr)):
			answer(nil)
		default:
			answer(fmt.Errorf("%s: %s", outcome, body))
		}
	})
	mux.HandleFunc("POST /dynamodb/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Errortype", "ResourceNotFoundException")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`)
	})
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		answer(fmt.Errorf("%s: %s", r.URL.Path, b))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	cmd := exec.Command(bootstrap)
	cmd.Env = append([]string{
		"AWS_LAMBDA_RUNTIME_API=" + ln.Addr().String(), "AWS_LAMBDA_FUNCTION_NAME=" + c.function, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"TABLE_NAME=bench", "DYNAMODB_ENDPOINT=http://" + ln.Addr().String() + "/dynamodb/",
		"STATE_MACHINE_ARN=arn:aws:states:us-east-1:123456789012:stateMachine:bench",
		"LOG_LEVEL=error",
	}, append(env, c.env...)...)
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
			tb.Fatalf("the %s function did not answer its event: %v\n%s", c.function, err, stderr.Bytes())
		}
		return time.Since(begin)
	case <-time.After(30 * time.Second):
		tb.Fatalf("the %s function did not answer within 30 s\n%s", c.function, stderr.Bytes())
		return 0
	}
}
