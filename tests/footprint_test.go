package tests

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// maxBinaryMiB bounds the stripped lambdaclaw binary, so that a new
// dependency is a deliberate choice: raising it is a change of its own.
// The bound is the budget, 25 MiB (issue 25); the binary is 22.5 MiB since
// the --stack commands and the Bedrock provider call AWS through
// shared/adapters/awsapi rather than eight of the SDK's service clients.
// A dependency
// that calls reflect's MethodByName (protobuf does) keeps every exported
// method of every type: the Prometheus client cost 18 MiB that way.
// `make bench` (BenchmarkFootprint) reports the size with the other
// footprint figures.
const maxBinaryMiB = 25

func TestBinarySize(t *testing.T) {
	st, err := os.Stat(binary)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(st.Size()) / (1 << 20); got > maxBinaryMiB {
		t.Errorf("the stripped lambdaclaw binary is %.1f MiB, more than its bound of %d MiB: "+
			"measure what grew it (go tool nm -size -sort size) and choose a smaller dependency, or raise the bound on purpose", got, maxBinaryMiB)
	}
}

// maxInitAllocs bounds what lambdaclaw's own packages allocate before
// main runs: a pattern, a schema or a table a command may never use is
// made on first use (sync.OnceValue), not at init. Allocation counts do
// not depend on the machine's speed; the time they take does. They make
// about 200 (a regexp compiled at init costs from 50 to 150).
const maxInitAllocs = 250

func TestInitWork(t *testing.T) {
	cmd := exec.Command(binary, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("lambdaclaw version: %v\n%s", err, out)
	}
	// init github.com/… @1.2 ms, 0.01 ms clock, 920 bytes, 10 allocs
	line := regexp.MustCompile(`(?m)^init (github\.com/lambdaclaw/\S+) @.*, (\d+) allocs$`)
	ms := line.FindAllStringSubmatch(string(out), -1)
	if len(ms) == 0 {
		t.Fatalf("no init line of lambdaclaw's packages in GODEBUG=inittrace=1's output:\n%s", out)
	}
	total := 0
	var heavy []string
	for _, m := range ms {
		n, _ := strconv.Atoi(m[2])
		total += n
		if n > 100 {
			heavy = append(heavy, fmt.Sprintf("%s (%d)", m[1], n))
		}
	}
	if total > maxInitAllocs {
		t.Errorf("lambdaclaw's packages make %d allocations at init, more than %d; the heaviest: %v", total, maxInitAllocs, heavy)
	}
}
