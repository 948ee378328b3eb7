package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// deadCount reads the Containers pane's "N dead in M pods".
var deadCount = regexp.MustCompile(`(\d+) dead in \d+ pods`)

// BenchmarkContainerDeathToScreen measures issue 10's "a change on the node
// shows on the dashboard within one second when events are available": a
// separate `nodegc simnode --preset large` process (1,000 pods, 2,000
// images) serves the runtime, the built dashboard runs in a 120x36 tmux
// pane on its Containers pane, and each iteration stops one running
// container through CRI and times how long until the pane's dead count
// shows it (the screen is read every 10 ms, so that is the resolution).
// Metrics: ms-to-screen (mean) and max-ms. Run with -benchtime 10x; with
// EVENTS=false the dashboard polls instead.
func BenchmarkContainerDeathToScreen(b *testing.B) {
	requireTmux(b)
	bin := buildNodegc(b)
	sock, dir := startSimnode(b, bin, "large")
	events := os.Getenv("EVENTS")
	if events == "" {
		events = "true"
	}
	s := startSession(b, 120, 36, bin, "--events="+events, "--paused", "--kubelet-pid", "-1", "--simulated", "--runtime-endpoint", "unix://"+sock,
		"--state-dir", filepath.Join(dir, "state"))
	s.waitText(b, "the Overview pane", `IMAGE FILESYSTEM`)
	s.press(b, "3")
	s.waitText(b, "the Containers pane", deadCount.String())

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx := context.Background()
	running, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		b.Fatal(err)
	}
	if len(running.Containers) < b.N {
		b.Fatalf("%d running containers for %d iterations", len(running.Containers), b.N)
	}
	dead := func() int {
		m := deadCount.FindStringSubmatch(strings.Join(s.screen(b), "\n"))
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	var total, worst time.Duration
	b.ResetTimer()
	for i := range b.N {
		before := dead()
		start := time.Now()
		if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: running.Containers[i].Id}); err != nil {
			b.Fatal(err)
		}
		for dead() <= before {
			if time.Since(start) > waitTimeout {
				b.Fatalf("the stopped container did not show within %s (dead count %d)", waitTimeout, before)
			}
			time.Sleep(10 * time.Millisecond)
		}
		d := time.Since(start)
		total += d
		worst = max(worst, d)
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-screen")
	b.ReportMetric(float64(worst.Milliseconds()), "max-ms")
	s.press(b, "q")
}

// startSimnode serves a separate `nodegc simnode --preset preset` (no
// workload: nothing changes unless a test asks) until the test ends, and
// returns its socket and a short temp dir for the dashboard's state.
func startSimnode(tb testing.TB, bin, preset string) (sock, dir string) {
	tb.Helper()
	dir, err := os.MkdirTemp("", "ngc-sim-") // short: a socket path fits in 108 bytes
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "sim.sock")
	sim := exec.Command(bin, "simnode", "--listen", "unix://"+sock, "--preset", preset)
	if err := sim.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sim.Process.Kill(); sim.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			return sock, dir
		}
		if i > 600 {
			tb.Fatal("simnode did not serve within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
