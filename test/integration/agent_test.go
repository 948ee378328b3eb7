package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctest"
	"github.com/nodegc/nodegc/internal/realnode"
)

// fillImageFs imports images until the image filesystem is at least
// usage percent full, and returns them.
func fillImageFs(t *testing.T, n *realnode.Node, usage int) []realnode.ImageRef {
	t.Helper()
	var imgs []realnode.ImageRef
	for g := 0; ; g++ {
		if u, _ := fsUsage(t, n); u >= usage {
			return imgs
		}
		if g > 40 {
			u, _ := fsUsage(t, n)
			t.Fatalf("image filesystem at %d%% after %d images", u, len(imgs))
		}
		imgs = append(imgs, n.Must(t).ImportImages(2, imageSize, fmt.Sprintf("fill%d", g))...)
	}
}

// needPrometheus returns the path of Debian's prometheus server, skipping
// the test without it (failing under NODEGC_REQUIRE_CONTAINERD=1, as the
// real suite's CI installs it: scripts/install-deps.sh).
func needPrometheus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("NODEGC_REQUIRE_CONTAINERD") == "1" {
			t.Fatal("no prometheus server (make deps installs Debian's prometheus package)")
		}
		t.Skip("no prometheus server (make deps installs Debian's prometheus package)")
	}
	return bin
}

// startPrometheus starts a Prometheus server on a loopback port, with a
// config and data dir of its own under the test's temp dir, scraping
// target every second, and returns its address once it is ready. It is
// stopped at cleanup, before the temp dir goes.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin := needPrometheus(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: nodegc\n    static_configs:\n      - targets: ['%s']\n", target)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := proctest.FreeAddress(t)
	p := proctest.Start(t, bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn") // few lines: stop reads them
	t.Cleanup(func() { p.Stop(t) }) // runs before TempDir's removal
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus not ready within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promSample is one sample of an instant query's answer.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs a PromQL instant query through the HTTP API.
func query(t *testing.T, addr, q string) []promSample {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, body)
	}
	return r.Data.Result
}

// value is the sample's value.
func (s promSample) value(t *testing.T) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample value %v: %v", s.Value, err)
	}
	return v
}

// agentFlags are the agent's flags on the node: metrics on addr (0 for
// none), periodic passes far off (the test forces them), the image GC
// band at 50/40 with no minimum age, no API server.
func agentFlags(t *testing.T, n *realnode.Node, state, addr string) []string {
	return append([]string{"agent", "--metrics-bind-address", addr, "--pod-source", "off",
		"--image-gc-period", "1h", "--container-gc-period", "1h",
		"--image-gc-high-threshold", "50", "--image-gc-low-threshold", "40", "--minimum-image-ttl-duration", "0"},
		cliFlags(t, n, state)...)
}

// gcFlags are the flags of `nodegc gc` beside the agent: cliFlags
// without --pod-logs-dir, a policy flag the agent's gc refuses.
func gcFlags(t *testing.T, n *realnode.Node, state string, args ...string) []string {
	flags := cliFlags(t, n, state)
	i := slices.Index(flags, "--pod-logs-dir")
	return append(append([]string{"gc"}, args...), slices.Delete(flags, i, i+2)...)
}

// TestAgentPrometheus runs the agent on a real containerd, `gc --yes`
// through it, and a real Prometheus server scraping it: after the forced
// image pass, PromQL returns the attempt with its result and reason, and
// the bytes it freed, as the agent measured them.
func TestAgentPrometheus(t *testing.T) { forEachRuntime(t, testAgentPrometheus) }

func testAgentPrometheus(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 128*MiB)
	needPrometheus(t)
	fillImageFs(t, n, 60)
	state := t.TempDir()
	metricsAddr := proctest.FreeAddress(t)
	agent := proctest.Start(t, nodegc(t), agentFlags(t, n, state, metricsAddr)...)
	agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))
	prom := startPrometheus(t, metricsAddr)

	gc := runCLI(t, gcFlags(t, n, state, "--images", "--yes")...)
	if gc.Code != 0 || !strings.Contains(gc.Stdout, "agent pid "+strconv.Itoa(agent.Cmd.Process.Pid)) {
		t.Fatalf("gc through the agent: exit %d\nstdout:\n%s\nstderr:\n%s", gc.Code, gc.Stdout, gc.Stderr)
	}
	if u, _ := fsUsage(t, n); u > 40 {
		t.Errorf("image filesystem at %d%% after the pass, want at most the low threshold 40%%", u)
	}

	// The agent's own figure, to compare with what Prometheus stored.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var freed float64
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, `nodegc_image_gc_freed_bytes{measure="statfs"} `); ok {
			freed, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if freed <= 0 {
		t.Fatalf("the agent measured %v bytes freed", freed)
	}

	// Prometheus scrapes every second: wait for the scrape after the pass.
	var attempts []promSample
	deadline := time.Now().Add(30 * time.Second)
	for len(attempts) == 0 && time.Now().Before(deadline) {
		attempts = query(t, prom, `nodegc_image_gc_attempts_total{trigger="forced"} > 0`)
		time.Sleep(250 * time.Millisecond)
	}
	if len(attempts) != 1 {
		t.Fatalf("forced attempts in Prometheus: %+v, want one series", attempts)
	}
	if m := attempts[0].Metric; m["result"] != "success" || m["reason"] != "threshold" || m["job"] != "nodegc" || attempts[0].value(t) != 1 {
		t.Errorf("the forced attempt = %v %v, want one, result success, reason threshold", m, attempts[0].Value)
	}
	got := query(t, prom, `nodegc_image_gc_freed_bytes{measure="statfs"}`)
	if len(got) != 1 || got[0].value(t) != freed {
		t.Errorf("freed bytes in Prometheus %+v, want %v", got, freed)
	}
	if got := query(t, prom, `nodegc_image_gc_freed_bytes{measure="runtime"} > 0`); len(got) != 1 {
		t.Errorf("runtime-reported freed bytes in Prometheus: %+v, want one sample above 0", got)
	}
	agent.Stop(t)
}

// TestAgentKilledMidPass kills the agent (SIGKILL) in the middle of an
// image pass that `gc --reclaim-all --yes` runs through it; a new agent
// on the same state dir reconciles, and then the journal accounts for
// every image removed: each image the runtime no longer lists has its
// removed line, and no image still listed has one.
func TestAgentKilledMidPass(t *testing.T) { forEachRuntime(t, testAgentKilledMidPass) }

func testAgentKilledMidPass(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 512*MiB)
	m := n.Must(t)
	imgs := m.ImportImages(40, imageSize, "victim")
	before := m.State().Images
	state := t.TempDir()
	agent := proctest.Start(t, nodegc(t), append(agentFlags(t, n, state, "0"), "--parallel", "1")...)
	agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))

	gc := proctest.Start(t, nodegc(t), gcFlags(t, n, state, "--reclaim-all", "--yes")...)
	for range 3 {
		agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"removed image"`))
	}
	if err := agent.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	agent.Wait()
	if err := gc.Wait(); err == nil {
		t.Errorf("gc succeeded with its agent killed mid-pass; stderr:\n%s", strings.Join(gc.Seen, "\n"))
	}
	mid := m.State().Images
	left := 0
	for _, img := range imgs {
		if slices.Contains(mid, img.ID) {
			left++
		}
	}
	if left == 0 {
		t.Fatal("the pass ended before the kill: nothing was left to interrupt")
	}
	t.Logf("killed with %d of %d images left", left, len(imgs))

	// A new agent reconciles the dead one's intents at its first snapshot.
	agent = proctest.Start(t, nodegc(t), agentFlags(t, n, state, "0")...)
	agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))
	agent.Stop(t)

	after := m.State().Images
	lines, err := engine.ReadJournalLines(state)
	if err != nil {
		t.Fatal(err)
	}
	outcome := map[string]engine.JournalOp{}
	reconciled := 0
	for _, l := range lines {
		if l.Kind == engine.ItemImage {
			outcome[l.ID] = l.Op
		}
		if l.Reconciled {
			reconciled++
		}
	}
	t.Logf("%d images gone, %d journal lines, %d written by reconciliation", len(before)-len(after), len(lines), reconciled)
	for _, id := range before {
		gone := !slices.Contains(after, id)
		op, journaled := outcome[id]
		switch {
		case gone && op != engine.JournalRemoved:
			t.Errorf("image %s is gone, journal says %q (journaled %v), want removed", id, op, journaled)
		case !gone && op == engine.JournalRemoved:
			t.Errorf("image %s is still listed, journal says removed", id)
		case op == engine.JournalIntent:
			t.Errorf("image %s: an intent left without outcome after the new agent's start", id)
		}
	}
}

// attachFlags are the flags of a command beside the agent: cliFlags
// without --pod-logs-dir, a policy flag (plan would plan with it rather
// than as the agent does; gc refuses it).
func attachFlags(t *testing.T, n *realnode.Node, state string, args ...string) []string {
	flags := cliFlags(t, n, state)
	i := slices.Index(flags, "--pod-logs-dir")
	return append(args, slices.Delete(flags, i, i+2)...)
}

// TestAgentAttach runs an agent on a real containerd and everything that
// attaches to it on the same node: a second agent is refused naming the
// first; `plan` reads the agent's records and equals the agent's own
// next pass; `gc --yes` runs through the agent and prints its report;
// the dashboard (in tmux) says it is attached, runs an image pass
// through the agent and shows it.
func TestAgentAttach(t *testing.T) { forEachRuntime(t, testAgentAttach) }

func testAgentAttach(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 128*MiB)
	fillImageFs(t, n, 60)
	state := t.TempDir()
	agent := proctest.Start(t, nodegc(t), agentFlags(t, n, state, "0")...)
	agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))
	pid := strconv.Itoa(agent.Cmd.Process.Pid)
	c := control.NewClient(control.SocketPath(state), false)
	defer c.Close()
	ctx := context.Background()

	t.Run("a second agent exits 2 naming the first", func(t *testing.T) {
		r := runCLI(t, agentFlags(t, n, state, "0")...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "(pid "+pid+")") || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("exit %d, stderr %q", r.Code, r.Stderr)
		}
	})

	t.Run("plan equals the agent's next pass", func(t *testing.T) {
		r := runCLI(t, attachFlags(t, n, state, "plan", "--images", "-o", "json")...)
		if r.Code != 0 {
			t.Fatalf("plan: exit %d\n%s", r.Code, r.Stderr)
		}
		var p engine.Plan
		decodeJSON(t, r, &p)
		planned := removalIDs(p)
		if len(planned) == 0 {
			t.Fatalf("the plan removes no image at %d%% used: the agent's records were not used\n%.800s", p.ImageGC.UsagePercent, r.Stdout)
		}
		rep, err := c.Force(ctx, engine.PassImages)
		if err != nil {
			t.Fatal(err)
		}
		if got := removalIDs(rep.Plan); !slices.Equal(got, planned) {
			t.Errorf("the agent's pass planned %v, plan said %v", got, planned)
		}
		var removed []string
		for _, it := range rep.Items {
			if it.Outcome == engine.OutcomeRemoved {
				removed = append(removed, it.ID)
			}
		}
		slices.Sort(removed)
		if sorted := slices.Sorted(slices.Values(planned)); !slices.Equal(removed, sorted) {
			t.Errorf("the agent's pass removed %v, plan said %v", removed, sorted)
		}
	})

	t.Run("gc --yes runs through the agent and prints its report", func(t *testing.T) {
		fillImageFs(t, n, 60)
		r := runCLI(t, attachFlags(t, n, state, "gc", "--images", "--yes")...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "through agent pid "+pid) || !strings.Contains(r.Stdout, "(images):") {
			t.Fatalf("gc: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
		}
		reports, err := c.Reports(ctx)
		if err != nil || len(reports) == 0 {
			t.Fatalf("reports %v, %v", reports, err)
		}
		last := reports[len(reports)-1]
		if last.Kind != engine.PassImages || !last.Forced || last.Count(engine.OutcomeRemoved) == 0 {
			t.Errorf("the agent's last pass: %s, forced %v, removed %d; want gc's image pass", last.Kind, last.Forced, last.Count(engine.OutcomeRemoved))
		}
		if u, _ := fsUsage(t, n); u > 40 {
			t.Errorf("image filesystem at %d%% after gc, want at most the low threshold 40%%", u)
		}
	})

	t.Run("the dashboard attaches and runs a pass through the agent", func(t *testing.T) {
		_, err := exec.LookPath("tmux")
		if err != nil {
			if os.Getenv("NODEGC_REQUIRE_CONTAINERD") == "1" {
				t.Fatal("no tmux (make deps installs it)")
			}
			t.Skip("no tmux")
		}
		fillImageFs(t, n, 60)
		before, err := c.Reports(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sock := proctest.TmuxSocket(t)
		run := func(args ...string) string { return proctest.Tmux(t, sock, args...) }
		cmd := strings.Join(append([]string{"env", "CONTAINER_RUNTIME_ENDPOINT=", nodegc(t), "--refresh", "500ms"}, attachFlags(t, n, state)...), " ")
		run("new-session", "-d", "-x", "200", "-y", "50", cmd)
		waitScreen := func(what string) {
			t.Helper()
			proctest.WaitPane(t, sock, 60*time.Second, what, nil)
		}
		waitScreen("attached to agent (pid " + pid + ", up")
		run("send-keys", "i")
		waitScreen("y run the pass now") // the confirm lists the shown plan
		run("send-keys", "y")
		var reports []engine.PassReport
		deadline := time.Now().Add(60 * time.Second)
		for len(reports) <= len(before) && time.Now().Before(deadline) {
			if reports, err = c.Reports(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(reports) != len(before)+1 {
			t.Fatalf("the agent ran %d passes after the dashboard's y, want 1", len(reports)-len(before))
		}
		last := reports[len(reports)-1]
		if last.Kind != engine.PassImages || !last.Forced || last.Count(engine.OutcomeRemoved) == 0 {
			t.Errorf("the dashboard's pass: %s, forced %v, removed %d", last.Kind, last.Forced, last.Count(engine.OutcomeRemoved))
		}
		waitScreen(fmt.Sprintf("#%d images", last.ID)) // the dashboard shows the agent's report
		run("send-keys", "q")
	})
	agent.Stop(t)
}

// removalIDs are the IDs of the images a plan removes, in its order.
func removalIDs(p engine.Plan) []string {
	out := make([]string, len(p.ImageGC.Remove))
	for i, r := range p.ImageGC.Remove {
		out[i] = r.ID
	}
	return out
}
