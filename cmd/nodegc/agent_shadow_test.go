package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctest"
)

// TestAgentShadowRemovesNothing runs `nodegc agent --shadow` on a
// simulated node past its image GC band: it logs shadow passes that would
// remove images and containers, says so in /metrics (nodegc_gc_shadow 1),
// journals no removal and leaves every image and container in place.
func TestAgentShadowRemovesNothing(t *testing.T) {
	bin := buildBinary(t)
	dir, ep := agentSimnode(t, bin, "nodegc-shadow-")
	stateDir := filepath.Join(dir, "state")
	addr := proctest.FreeAddress(t)
	agent, lines := startProcess(t, bin, "agent", "--shadow", "--metrics-bind-address", addr,
		"--image-gc-period", "1500ms", "--container-gc-period", "1s",
		"--image-gc-high-threshold", "50", "--image-gc-low-threshold", "40", "--minimum-image-ttl-duration", "0",
		"--simulated", "--runtime-endpoint", ep, "--state-dir", stateDir, "--kubelet-config", os.DevNull, "--kubelet-pid", "-1")
	var seen []string
	wouldRemove := func(kind string) func(string) bool {
		return func(l string) bool {
			return strings.Contains(l, `"msg":"shadow pass: removed nothing"`) && strings.Contains(l, `"kind":"`+kind+`"`) &&
				!strings.Contains(l, `"wouldRemove`+map[string]string{"images": "Images", "containers": "Containers"}[kind]+`":0`)
		}
	}
	waitLine(t, lines, &seen, 30*time.Second, wouldRemove("images"))
	waitLine(t, lines, &seen, 30*time.Second, wouldRemove("containers"))
	waitLine(t, lines, &seen, 30*time.Second, wouldRemove("images")) // a second round: still there

	_, body := httpGet(t, "http://"+addr+"/metrics")
	if v, ok := sample(body, "nodegc_gc_shadow "); !ok || v != 1 {
		t.Errorf("nodegc_gc_shadow = %v (found %v), want 1", v, ok)
	}
	if v, ok := sample(body, "nodegc_shadow_passes_total "); !ok || v < 3 {
		t.Errorf("nodegc_shadow_passes_total = %v (found %v), want at least 3", v, ok)
	}
	for _, l := range seen {
		if strings.Contains(l, `"msg":"pass done"`) || strings.Contains(l, `"msg":"removed `) {
			t.Errorf("the agent in shadow mode ran a pass: %s", l)
		}
	}
	agent.Process.Signal(syscall.SIGTERM)
	if err := agent.Wait(); err != nil {
		t.Errorf("agent: %v", err)
	}
	lines2, err := engine.ReadJournalLines(stateDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, l := range lines2 {
		if l.Op == engine.JournalRemoved || l.Op == engine.JournalIntent {
			t.Errorf("the agent in shadow mode journalled %s %s %s", l.Op, l.Kind, l.ID)
		}
	}
}
