package attacks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctest"
)

// TestSocketCommandsNameTheirSender is issue 36's "also seen": the
// agent ran commands sent on its control socket without saying whose they
// were. Now, before it runs a pause, a preview, a forced pass or a
// resume, the agent logs a "control command" line naming the path and
// the socket peer's uid and pid (SO_PEERCRED), so a node's owner can
// tell which process of which user asked.
func TestSocketCommandsNameTheirSender(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the control socket serves only root peers: the row needs root")
	}
	_, ep := startSimnode(t)
	state := filepath.Join(t.TempDir(), "state")
	agent := proctest.Start(t, binary(t), "agent", "--simulated", "--runtime-endpoint", ep, "--state-dir", state,
		"--kubelet-config", os.DevNull, "--kubelet-pid", "-1", "--pod-source", "off", "--metrics-bind-address", "0",
		"--image-gc-period", "1h", "--container-gc-period", "1h")
	agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))
	defer agent.Stop(t)
	c := control.NewClient(control.SocketPath(state), false)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	peer := fmt.Sprintf(`"uid":%d,"pid":%d`, os.Getuid(), os.Getpid())
	for _, cmd := range []struct {
		path string
		send func() error
	}{
		{"/v1/pause", func() error { return c.Pause(ctx, engine.Pause{}) }},
		{"/v1/preview", func() error { _, err := c.Preview(ctx, engine.PassContainers); return err }},
		{"/v1/force", func() error { _, err := c.Force(ctx, engine.PassContainers); return err }},
		{"/v1/resume", func() error { return c.Resume(ctx) }},
	} {
		if err := cmd.send(); err != nil {
			t.Fatalf("%s: %v", cmd.path, err)
		}
		agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"control command"`, `"command":"`+cmd.path+`"`, peer))
	}
}
