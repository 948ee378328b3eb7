package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/promtest"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// alertSpeed is how much faster than real time the simulated node's
// clock runs in TestExampleAlertFiresInPrometheus: 30 simulated seconds a
// step, at most one step every 250 ms.
const (
	alertStep  = 30 * time.Second
	alertSpeed = 120
)

// scaledRules are the groups of deploy/examples/prometheusrule.yaml as a
// Prometheus rule file, each rule's for: divided by speed: Prometheus
// holds a condition for real time, and the node's clock runs speed times
// faster. The expressions are the example's, unchanged: the forecast's
// seconds are the node's.
func scaledRules(t *testing.T, speed int) []byte {
	t.Helper()
	return promtest.ExampleRules(t, func(r map[string]any) {
		d, err := time.ParseDuration(fmt.Sprint(r["for"]))
		if err != nil {
			t.Fatalf("rule %v: for: %v", r["alert"], err)
		}
		r["for"] = fmt.Sprintf("%dms", (d / time.Duration(speed)).Milliseconds())
	})
}

// startAlertPrometheus starts Debian's Prometheus (make deps installs it)
// scraping the agent at target and evaluating rules, both every second,
// and returns its address. t.Cleanup stops it.
func startAlertPrometheus(t *testing.T, target string, rules []byte) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		kubetest.SkipOrFail(t, "no prometheus server (make deps installs Debian's prometheus package)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files":     []string{filepath.Join(dir, "rules.yaml")},
		"scrape_configs": []map[string]any{{"job_name": "nodegc", "static_configs": []map[string]any{{"targets": []string{target}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", kubetest.FreePort(t))
	log := filepath.Join(dir, "prometheus.log")
	kubetest.StartProcess(t, log, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	if !kubetest.WaitFor(30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("prometheus not ready within 30 s; its log:\n%s", kubetest.Tail(log, 20))
	}
	return addr
}

// firingAlerts returns the severities of the example alert that
// Prometheus says are firing.
func firingAlerts(t *testing.T, addr string) map[string]bool {
	t.Helper()
	q := `ALERTS{alertname="NodeImageFsDiskPressureForecast",alertstate="firing"}`
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, body)
	}
	out := map[string]bool{}
	for _, s := range r.Data.Result {
		out[s.Metric["severity"]] = true
	}
	return out
}

// TestExampleAlertFiresInPrometheus: a real Prometheus scrapes a real
// agent on a simulated node that fills at a steady 8 MiB every 30 s
// (its images are all in use but 1 MiB ones), its clock alertSpeed
// times real time, and evaluates deploy/examples/prometheusrule.yaml
// (its for: scaled to that clock). Both alerts, warning and critical,
// fire before imagefs.available falls below the kubelet's default
// eviction threshold, 15% (pkg/kubelet/eviction/defaults_linux.go): the
// kubelet's own signal, which what GC cannot remove crosses no earlier.
// None fires in the first forecast.MinHistory, which has no forecast.
func TestExampleAlertFiresInPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute and a half of real time")
	}
	dir, err := os.MkdirTemp("", "fc-alert-") // short: the control socket is in it
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clk := &simClock{base: simnode.DefaultStart}
	const capacity = 10 << 30
	n, ep := simnode.ServeTemp(t, simnode.Options{Seed: 7, Images: 4, Pods: 2, Start: clk.base, Now: clk.now,
		MinImageBytes: 1 << 20, MaxImageBytes: 1 << 20, CapacityBytes: capacity, BaseUsageBytes: 6<<30 + 512<<20,
		Workload: simnode.Workload{GrowthBytes: 8 << 20}})
	statfs := simfs.Local(n)
	available := func() int64 {
		fs, err := statfs(simnode.DefaultMountpoint)
		if err != nil {
			t.Fatal(err)
		}
		return fs.AvailableBytes
	}
	evictAt := int64(capacity) * 15 / 100
	if available() < evictAt*2 {
		t.Fatalf("the node starts with %d bytes available: too close to the eviction line", available())
	}

	port := kubetest.FreePort(t)
	stop, taken := runAlertAgent(t, ep, filepath.Join(dir, "state"), clk, n, fmt.Sprintf("127.0.0.1:%d", port))
	defer stop()
	prom := startAlertPrometheus(t, fmt.Sprintf("127.0.0.1:%d", port), scaledRules(t, alertSpeed))

	firstFired := map[string]time.Duration{}
	pace := alertStep / alertSpeed
	for step := 0; ; step++ {
		next := time.Now().Add(pace)
		clk.advance(alertStep)
		n.Step(clk.now())
		// The clock moves on only once the agent has read this moment.
		if !kubetest.WaitFor(10*time.Second, func() bool { return taken.Load() >= clk.now().UnixNano() }) {
			t.Fatalf("no snapshot at %ds within 10 s", clk.sinceBase(clk.now()))
		}
		at := clk.now().Sub(clk.base)
		for sev := range firingAlerts(t, prom) {
			if _, ok := firstFired[sev]; !ok {
				firstFired[sev] = at
				t.Logf("%s fires at %s (simulated)", sev, at)
			}
		}
		if len(firstFired) > 0 && at <= forecast.MinHistory {
			t.Fatalf("alerts %v fire at %s, before the forecast has history", firstFired, at)
		}
		if available() < evictAt {
			t.Logf("imagefs.available below 15%% at %s (simulated)", at)
			break
		}
		if step == 2000 {
			t.Fatalf("imagefs.available still %d after %d steps", available(), step)
		}
		time.Sleep(time.Until(next))
	}
	for _, sev := range []string{"warning", "critical"} {
		if _, ok := firstFired[sev]; !ok {
			t.Errorf("the %s alert did not fire before imagefs.available crossed the eviction threshold", sev)
		}
	}
}

// runAlertAgent runs an agent on the simulated node at ep with its
// metrics on addr and a pass every 20 ms of real time; taken is the
// latest snapshot's time (UnixNano). stop ends it.
func runAlertAgent(t *testing.T, ep, stateDir string, clk *simClock, n *simnode.Node, addr string) (stop func(), taken *atomic.Int64) {
	t.Helper()
	c, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{uptime: clk.uptime}
	taken = &atomic.Int64{}
	observe := func(s engine.Snapshot) {
		a.ObserveSnapshot(s)
		taken.Store(s.TakenAt.UnixNano())
	}
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simfs.Local(n), Policy: engine.DefaultPolicy(),
		Now: clk.now, StateDir: stateDir, OnSnapshot: observe})
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	l, err := Listen(ctx, addr, log)
	if err != nil {
		cancel()
		e.Close()
		c.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, Options{Log: log, StateDir: stateDir, Engine: e, Started: clk.now(), Listener: l, Address: addr,
			ProbeStateDir:  func(string) error { return nil },
			Scheduler:      engine.SchedulerOptions{ContainerPeriod: 20 * time.Millisecond, ImagePeriod: 100 * time.Millisecond},
			StartScheduler: testScheduler, StoppedLine: func(engine.PassReport) string { return "stopped" }})
	}()
	if !kubetest.WaitFor(10*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("the agent serves no metrics on %s within 10 s", addr)
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		l.Close()
		e.Close()
		c.Close()
	}, taken
}
