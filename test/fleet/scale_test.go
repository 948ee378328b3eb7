package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/proctest"
)

// nodeCount is NODEGC_FLEET_NODES, default 200.
func nodeCount(t *testing.T) int {
	n := 200
	if v := os.Getenv("NODEGC_FLEET_NODES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 || n > 60000 {
			t.Fatalf("NODEGC_FLEET_NODES=%q: want a number from 2 to 60000", v)
		}
	}
	return n
}

func simName(i int) string { return fmt.Sprintf("sim-%05d", i) }

// TestFleetAtScale is the fleet's benchmark (docs/performance.md): n
// Nodes and NodeGC objects in a real kube-apiserver and etcd, written as
// agents write them, and every object's heartbeat written again at the
// agents' cadence (one a HeartbeatPeriod each, spread over it) while it
// measures the nodegc binary: the whole `nodegc fleet -o json` process,
// the screen's first frame from the program's start, and a status write
// reaching the screen. The figures are logged, not asserted; the test
// fails only when a read is wrong (a row missing, a change not shown).
func TestFleetAtScale(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		kubetest.SkipOrFail(t, "tmux not installed (make deps installs it)")
	}
	n := nodeCount(t)
	api := kubetest.StartAPIServer(t, kubetest.APIServerOptions{})
	applyCRD(t, api)
	cs, dyn := api.Client(t), dynClient(t, api.Admin)
	bin := buildNodegc(t, t.TempDir())

	started := time.Now()
	var wg sync.WaitGroup
	const writers = 8
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				writeObject(t, dyn, simName(i), createReadyNode(t, cs, simName(i)), status(time.Now(), int32(i%100), int32(i%7)))
			}
		})
	}
	wg.Wait()
	t.Logf("%d Nodes and NodeGC objects written in %s", n, time.Since(started).Round(time.Millisecond))

	// The agents' heartbeats: each object once a period, spread evenly.
	ctx, stop := context.WithCancel(t.Context())
	var beats sync.WaitGroup
	node := simName(n / 2)
	beats.Go(func() { heartbeats(ctx, t, dyn, n, node) })
	defer func() { stop(); beats.Wait() }()

	var walls []time.Duration
	for range 5 {
		start := time.Now()
		rows := fleetJSON(t, bin, api.Admin)
		walls = append(walls, time.Since(start))
		if len(rows) != n || rows[simName(n-1)].State != fleet.OK {
			t.Fatalf("nodegc fleet -o json: %d rows, last %+v; want %d, ok", len(rows), rows[simName(n-1)], n)
		}
	}
	t.Logf("nodegc fleet -o json, the whole process, %d nodes: %s", n, spread(walls))
	if base := os.Getenv("NODEGC_FLEET_BASELINE"); base != "" {
		sideBySide(t, bin, base, api.Admin, n)
	}

	var firsts []time.Duration
	for range 3 {
		start := time.Now()
		s := newScreen(t, 200, 40, []string{"TERM=xterm-256color", "KUBECONFIG=" + api.Admin}, bin, "fleet")
		_, at := s.waitFor(t, "the first frame", time.Minute, func(sc string) bool {
			return strings.Contains(sc, fmt.Sprintf("%d nodes · %d agents ok", n, n))
		})
		firsts = append(firsts, at.Sub(start))
		proctest.KillTmux(s.sock)
	}
	t.Logf("nodegc fleet, its first frame from the program's start, %d nodes: %s", n, spread(firsts))

	s := newScreen(t, 200, 40, []string{"TERM=xterm-256color", "KUBECONFIG=" + api.Admin}, bin, "fleet", "--refresh", "1h")
	s.waitFor(t, "the first frame", time.Minute, func(sc string) bool { return strings.Contains(sc, fmt.Sprintf("%d nodes", n)) })
	s.press(t, append([]string{"/"}, strings.Split(node, "")...)...)
	s.press(t, "Enter")
	s.waitFor(t, "the filtered row", time.Minute, func(sc string) bool { return strings.Contains(sc, fmt.Sprintf("1/%d match", n)) })
	var lags []time.Duration
	for i := range 10 {
		dead := int32(9000 + i)
		start := time.Now()
		updateStatus(t, dyn, node, "", status(time.Now(), 50, dead))
		_, at := s.waitFor(t, "the status written", time.Minute, func(sc string) bool { return rowHas(sc, node, strconv.Itoa(int(dead))) })
		lags = append(lags, at.Sub(start))
	}
	t.Logf("a status write (from before the write call) until the screen shows it, %d nodes: %s", n, spread(lags))
	if shot := os.Getenv("NODEGC_FLEET_SHOT"); shot != "" {
		screenshot(t, bin, api, n, shot)
	}
}

// screenshot writes the fleet screen, with its colours, to path (for
// scripts/screenshots.sh): one node's agent silent past three periods,
// one object written badly, one node without an object.
func screenshot(t *testing.T, bin string, api *kubetest.APIServer, n int, path string) {
	t.Helper()
	cs, dyn := api.Client(t), dynClient(t, api.Admin)
	updateStatus(t, dyn, simName(1), "", status(time.Now().Add(-fleet.StaleAfter-7*time.Minute), 71, 4))
	bad := status(time.Now(), 30, 0)
	bad.HeartbeatTime = nil
	updateStatus(t, dyn, simName(2), "", bad)
	createNode(t, cs, "sim-new")
	s := newScreen(t, 140, 30, []string{"TERM=tmux-256color", "COLORTERM=truecolor", "KUBECONFIG=" + api.Admin}, bin, "fleet")
	s.waitFor(t, "the fleet", time.Minute, func(sc string) bool { return strings.Contains(sc, fmt.Sprintf("%d nodes", n+1)) })
	time.Sleep(time.Second) // the background colour's answer, and its redraw
	if err := os.WriteFile(path, []byte(proctest.Tmux(t, s.sock, "capture-pane", "-e", "-p", "-t", "f")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sideBySide runs `nodegc fleet -o json` of bin and of base (another
// build, NODEGC_FLEET_BASELINE) alternately, 5 runs each, and logs both
// and their ratio: the same cluster, load and cadence.
func sideBySide(t *testing.T, bin, base, kubeconfig string, n int) {
	var ours, theirs []time.Duration
	for range 5 {
		for _, b := range []struct {
			bin string
			to  *[]time.Duration
		}{{bin, &ours}, {base, &theirs}} {
			start := time.Now()
			if rows := fleetJSON(t, b.bin, kubeconfig); len(rows) != n {
				t.Fatalf("%s fleet -o json: %d rows, want %d", b.bin, len(rows), n)
			}
			*b.to = append(*b.to, time.Since(start))
		}
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	t.Logf("side by side, -o json, %d nodes: this build %s; %s %s; median ratio %.2f",
		n, spread(ours), base, spread(theirs), float64(theirs[2])/float64(ours[2]))
}

// heartbeats writes each object's status again once a HeartbeatPeriod,
// spread evenly over it, until ctx ends: the agents' cadence at rest.
// skip is the node whose writes the test measures. A write that fails
// (a conflict with the test's own) is left for the next period, as an
// agent would.
func heartbeats(ctx context.Context, t *testing.T, dyn dynamic.Interface, n int, skip string) {
	tick := time.NewTicker(fleet.HeartbeatPeriod / time.Duration(n))
	defer tick.Stop()
	for i := 0; ; i = (i + 1) % n {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if simName(i) != skip {
			_ = putStatus(t, dyn, simName(i), "", status(time.Now(), int32(i%100), int32(i%7)))
		}
	}
}

// spread is min, median and max of ds.
func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("min %s, median %s, max %s over %d runs", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]), len(s))
}
