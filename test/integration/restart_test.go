package integration

import (
	"context"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"

	"github.com/nodegc/nodegc/internal/realnode"
)

// TestPassRightAfterRestart: a pass started as soon as containerd is back
// must succeed, even when the CRI adapter's connection was left in gRPC's
// reconnect backoff by the calls made while containerd was down.
func TestPassRightAfterRestart(t *testing.T) { forEachRuntime(t, testPassRightAfterRestart) }

func testPassRightAfterRestart(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	ctx := context.Background()
	e := newEngine(t, n, engineOptions{Runtime: c, Policy: engine.DefaultPolicy(), StateDir: t.TempDir()})
	for i := range 3 {
		m.Stop()
		// A pass while containerd is down fails, as it must; the
		// adapter's connection then retries in the background with a
		// growing backoff while the socket is missing.
		if _, err := e.Run(ctx, engine.PassContainers); err == nil {
			t.Fatal("a pass with containerd down succeeded")
		}
		time.Sleep(2 * time.Second) // containerd down for a while: no timing assertion, only a longer outage
		m.Restart()
		if r, err := e.Run(ctx, engine.PassContainers); err != nil || !r.OK() {
			t.Errorf("restart %d: the first pass after containerd is back failed: %v", i+1, err)
		}
	}
}
