package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/realnode"
)

// MiB is a mebibyte, for image and filesystem sizes.
const MiB = 1 << 20

// imageSize is the padding asked for the images the tests import: the test
// binary (about 2.4 MiB) plus padding. CRI reports about this size; the
// image filesystem holds about twice that (blob and unpacked snapshot).
const imageSize = 4 * MiB

// buildDir holds the binaries built once per test process.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nodegc-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	realnode.Main(m, func() { os.RemoveAll(dir) })
}

var (
	testBinOnce sync.Once
	testBin     string
	testBinErr  error

	nodegcOnce sync.Once
	nodegcBin  string
	nodegcErr  error
)

// forEachRuntime runs body once per runtime of the real suite
// (realnode.Runtimes: Debian's containerd 1.6 and containerd 2.x built from
// source), each in a subtest named after the runtime, so
// `go test -run 'TestImageGC/containerd-2.2'` picks one. A runtime this
// machine cannot run skips its subtest, or fails it under
// NODEGC_REQUIRE_CONTAINERD=1 (CI). Every real test goes through it:
//
//	func TestX(t *testing.T) { forEachRuntime(t, testX) }
//
//	func testX(t *testing.T, rt realnode.Runtime) {
//		n := startNode(t, rt, 64*MiB)
//		...
//	}
func forEachRuntime(t *testing.T, body func(t *testing.T, rt realnode.Runtime)) {
	t.Helper()
	for _, rt := range realnode.Runtimes() {
		t.Run(rt.Name, func(t *testing.T) { body(t, rt) })
	}
}

// forEachRuntimeB is forEachRuntime for benchmarks.
func forEachRuntimeB(b *testing.B, body func(b *testing.B, rt realnode.Runtime)) {
	b.Helper()
	for _, rt := range realnode.Runtimes() {
		b.Run(rt.Name, func(b *testing.B) { body(b, rt) })
	}
}

// startNode starts a real containerd of runtime rt whose image filesystem
// is a tmpfs of size bytes, sharing one build of the image test binary
// across the tests. It skips the test without root or the runtime (fails
// under NODEGC_REQUIRE_CONTAINERD=1).
func startNode(tb testing.TB, rt realnode.Runtime, size int64) *realnode.Node {
	tb.Helper()
	testBinOnce.Do(func() {
		testBin, testBinErr = realnode.BuildTestBinary(filepath.Join(buildDir, "nodegc-testbin"))
	})
	if testBinErr != nil {
		tb.Fatal(testBinErr)
	}
	return realnode.Start(tb, realnode.Options{ImageFsSize: size, TestBinary: testBin, Runtime: rt})
}

// nodegc returns the path of the nodegc binary, built once from the module.
func nodegc(tb testing.TB) string {
	tb.Helper()
	nodegcOnce.Do(func() {
		out := filepath.Join(buildDir, "nodegc")
		cmd := exec.Command("go", "build", "-o", out, "github.com/nodegc/nodegc/cmd/nodegc")
		if b, err := cmd.CombinedOutput(); err != nil {
			nodegcErr = fmt.Errorf("build nodegc: %w: %s", err, b)
			return
		}
		nodegcBin = out
	})
	if nodegcErr != nil {
		tb.Fatal(nodegcErr)
	}
	return nodegcBin
}

// cliResult is one run of the nodegc binary.
type cliResult struct {
	Stdout, Stderr string
	Code           int
}

// runCLI runs the nodegc binary with args (stdin not a terminal, no
// CONTAINER_RUNTIME_ENDPOINT) and returns its output and exit status.
func runCLI(tb testing.TB, args ...string) cliResult {
	tb.Helper()
	return runCLIBin(tb, nodegc(tb), args...)
}

// runCLIBin is runCLI with another nodegc binary (a benchmark's older
// build).
func runCLIBin(tb testing.TB, bin string, args ...string) cliResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONTAINER_RUNTIME_ENDPOINT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliResult{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		tb.Fatalf("run nodegc %v: %v", args, err)
	}
	return r
}

// cliFlags are the flags every binary run against a node gets: the node's
// endpoint, a private state dir, an empty kubelet config and no kubelet
// process (so neither the machine's /var/lib/kubelet/config.yaml nor a
// running kubelet, such as test/kubelet's, counts) and the node's pod
// logs dir.
func cliFlags(tb testing.TB, n *realnode.Node, stateDir string) []string {
	tb.Helper()
	cfg := filepath.Join(tb.TempDir(), "kubelet-config.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return []string{"--runtime-endpoint", n.Endpoint(), "--state-dir", stateDir,
		"--kubelet-config", cfg, "--kubelet-pid", "-1", "--pod-logs-dir", n.PodLogsDir()}
}

// decodeJSON decodes a binary's JSON output into v.
func decodeJSON(tb testing.TB, r cliResult, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		tb.Fatalf("decode nodegc output: %v\nstdout:\n%s\nstderr:\n%s", err, r.Stdout, r.Stderr)
	}
}

// dial connects the CRI adapter to the node, closed at the end of the test.
func dial(tb testing.TB, n *realnode.Node) *cri.Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, n.Endpoint(), cri.Options{})
	if err != nil {
		tb.Fatalf("dial %s: %v", n.Endpoint(), err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// clock is an engine clock a test sets. Engines sharing a state dir and
// reading clocks set apart stand for nodegc runs at those times.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

// Now is the engine's Options.Now.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// engineOptions are the options of an engine on the node: the CRI adapter
// as reader and remover, the node's pod logs dir, the state dir and clock.
type engineOptions struct {
	Runtime  engine.Runtime
	Remover  engine.Remover // nil means Runtime
	Policy   engine.Policy
	StateDir string
	Clock    *clock // nil means time.Now
	// Parallel is the pass's pool width; 0 means 1, the kubelet's serial
	// order, which these tests pin (the journal's order, one removal in
	// flight when containerd dies), unless AdaptivePool is set.
	Parallel int
	// AdaptivePool runs the engine's default pool, which adapts its
	// width to the runtime (pool_test.go).
	AdaptivePool bool
}

// newEngine builds an engine, failing the test on error.
func newEngine(tb testing.TB, n *realnode.Node, o engineOptions) *engine.Engine {
	tb.Helper()
	p := o.Policy
	p.PodLogsDir = n.PodLogsDir()
	eo := engine.Options{Reader: o.Runtime, Remover: o.Remover, Policy: p, StateDir: o.StateDir, Parallel: max(o.Parallel, 1)}
	if o.AdaptivePool {
		eo.Parallel = engine.AutoParallel
	}
	if eo.Remover == nil {
		eo.Remover = o.Runtime
	}
	if o.Clock != nil {
		eo.Now = o.Clock.Now
	}
	e, err := engine.New(eo)
	if err != nil {
		tb.Fatalf("engine: %v", err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// detectAt makes the images the runtime lists now first detected at t in
// stateDir's records, by a snapshot of an engine whose clock reads t: as
// if nodegc had run then. Images already recorded keep their times.
func detectAt(tb testing.TB, n *realnode.Node, c engine.Runtime, stateDir string, t time.Time) engine.Snapshot {
	tb.Helper()
	e := newEngine(tb, n, engineOptions{Runtime: c, Policy: engine.DefaultPolicy(), StateDir: stateDir, Clock: newClock(t)})
	defer e.Close() // another engine or the binary takes the state dir next
	s, err := e.Snapshot(context.Background())
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	return s
}

// fsUsage is the image filesystem's usage percent as the kubelet computes
// it, from a statfs of the tmpfs.
func fsUsage(tb testing.TB, n *realnode.Node) (int, engine.FsStats) {
	tb.Helper()
	fs, err := engine.Statfs(n.ImageFsMount())
	if err != nil {
		tb.Fatal(err)
	}
	u, err := engine.UsagePercent(fs)
	if err != nil {
		tb.Fatal(err)
	}
	return u, fs
}

// imagePolicy is the default policy with the image GC band set.
func imagePolicy(high, low int, minAge time.Duration) engine.Policy {
	p := engine.DefaultPolicy()
	p.Image.HighThresholdPercent, p.Image.LowThresholdPercent, p.Image.MinAge = high, low, minAge
	return p
}

// ids returns the IDs of images.
func ids(imgs []realnode.ImageRef) []string {
	out := make([]string, len(imgs))
	for i, img := range imgs {
		out[i] = img.ID
	}
	return out
}

// itemsWith returns the IDs of the report's items of kind with outcome, in
// report order.
func itemsWith(r engine.PassReport, kind engine.ItemKind, o engine.Outcome) []string {
	var out []string
	for _, it := range r.Items {
		if it.Kind == kind && it.Outcome == o {
			out = append(out, it.ID)
		}
	}
	return out
}

// item returns the report's item for id.
func item(tb testing.TB, r engine.PassReport, id string) engine.ItemResult {
	tb.Helper()
	for _, it := range r.Items {
		if it.ID == id {
			return it
		}
	}
	tb.Fatalf("no item %s in the report; items: %+v", id, r.Items)
	return engine.ItemResult{}
}

// journalIDs returns the IDs of the journal entries of kind, oldest first,
// from the entries after skip.
func journalIDs(tb testing.TB, stateDir string, kind engine.ItemKind, skip int) []string {
	tb.Helper()
	js, err := engine.ReadJournal(stateDir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, j := range js[min(skip, len(js)):] {
		if j.Kind == kind {
			out = append(out, j.ID)
		}
	}
	return out
}

// listed reports whether CRI lists the image (by ID).
func listed(tb testing.TB, n *realnode.Node, id string) bool {
	tb.Helper()
	return slices.Contains(n.Must(tb).State().Images, id)
}

// eventually reports whether cond becomes true within 15 seconds: CRI
// removeContainer removes a container through CRI directly, as the
// kubelet or an operator would, not through nodegc.
func removeContainer(tb testing.TB, n *realnode.Node, id string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := n.RuntimeClient().RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		tb.Fatalf("remove container %s: %v", id, err)
	}
}

// podUID returns a pod UID unique to this test process and the name, so
// concurrent suites never share a kubepods cgroup.
func podUID(name string) string {
	return fmt.Sprintf("6e0d%04x-%04x-4000-8000-%012x", os.Getpid()&0xffff, len(name), hash(name))
}

func hash(s string) uint64 {
	var h uint64 = 1469598103934665603
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h & 0xffffffffffff
}
