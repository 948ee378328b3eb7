package attacks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctest"
)

// TestStateDirAncestors: a state dir below a directory a non-root user
// owns is refused by every process that can delete, in one line naming
// --state-dir with exit 2, before it writes anything: that user could
// swap the checked state dir for a symlink to a directory of root's
// (image-records.json, the journal and the lock written there). Here the
// user's directory already holds the state dir root made in it, and a
// root-only directory with an image-records.json waits to be the swap's
// target.
func TestStateDirAncestors(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("another user's directory needs root to make")
	}
	for _, tt := range []struct {
		name string
		args func(ep, state string) []string
	}{
		{"gc", func(ep, state string) []string {
			return []string{"gc", "--images", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state, "--kubelet-pid", "-1", "--pod-source", "off"}
		}},
		{"the agent", func(ep, state string) []string {
			return []string{"agent", "--metrics-bind-address", "0", "--simulated", "--runtime-endpoint", ep, "--state-dir", state, "--kubelet-pid", "-1", "--pod-source", "off"}
		}},
	} {
		t.Run(tt.name+" refuses a state dir in another user's directory", func(t *testing.T) {
			base := t.TempDir()
			eve := filepath.Join(base, "eve")
			if err := os.Mkdir(eve, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(eve, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			state := filepath.Join(eve, "state")
			if err := os.Mkdir(state, 0o700); err != nil { // root's, as an earlier run made it
				t.Fatal(err)
			}
			rootOnly := filepath.Join(base, "root-only")
			if err := os.Mkdir(rootOnly, 0o700); err != nil {
				t.Fatal(err)
			}
			records := filepath.Join(rootOnly, "image-records.json")
			if err := os.WriteFile(records, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, ep := startSimnode(t)
			r := nodegc(t, tt.args(ep, state)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			want := "--state-dir: " + state + " is below a directory another user can change (" + eve + ": owned by uid 65534"
			if r.hung || r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], want) {
				t.Fatalf("exit %d (hung %v), stderr %q; want exit 2 and one line: %s…", r.code, r.hung, r.stderr, want)
			}
			if names, err := os.ReadDir(state); err != nil || len(names) != 0 {
				t.Errorf("the refused state dir holds %v (%v), want nothing written", names, err)
			}
			if data, err := os.ReadFile(records); err != nil || string(data) != "keep" {
				t.Errorf("%s holds %q (%v), want it untouched", records, data, err)
			}
		})
	}
}

// TestOneEnginePerRuntime: while an agent removes from a runtime, a gc
// with a state dir of its own on the same runtime (the socket by another
// name too) exits 2 in one line naming the agent's pid and state dir,
// before it removes anything; a read-only plan still runs beside it.
func TestOneEnginePerRuntime(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the runtime lock of root's engines needs root")
	}
	t.Setenv(engine.RuntimeLockDirEnv, filepath.Join(t.TempDir(), "runtimes"))
	node, ep := startSimnode(t)
	first := filepath.Join(t.TempDir(), "agent-state")
	agent := proctest.Start(t, binary(t), "agent", "--metrics-bind-address", "0", "--simulated", "--runtime-endpoint", ep,
		"--state-dir", first, "--kubelet-pid", "-1", "--pod-source", "off", "--image-gc-period", "1h", "--container-gc-period", "1h")
	agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))
	defer agent.Stop(t)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(filepath.Dir(strings.TrimPrefix(ep, "unix://")), alias); err != nil {
		t.Fatal(err)
	}
	for _, endpoint := range []string{ep, "unix://" + filepath.Join(alias, filepath.Base(ep))} {
		t.Run("gc on "+endpoint, func(t *testing.T) {
			node.ResetCalls()
			r := nodegc(t, "gc", "--containers", "--yes", "--simulated", "--runtime-endpoint", endpoint, "--state-dir", filepath.Join(t.TempDir(), "gc-state"), "--kubelet-pid", "-1", "--pod-source", "off")
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			want := fmt.Sprintf("another nodegc (pid %d, state dir %s) is removing from the runtime %s", agent.Cmd.Process.Pid, first, endpoint)
			if r.hung || r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], want) {
				t.Fatalf("exit %d (hung %v), stderr %q; want exit 2 and one line: …%s…", r.code, r.hung, r.stderr, want)
			}
			if calls := node.MutatingCalls(); len(calls) != 0 {
				t.Errorf("the refused gc sent %v", calls)
			}
		})
	}
	t.Run("a read-only plan runs beside it", func(t *testing.T) {
		r := nodegc(t, "plan", "--simulated", "--runtime-endpoint", ep, "--state-dir", first, "--kubelet-pid", "-1", "--pod-source", "off")
		if r.code != 0 {
			t.Fatalf("exit %d, stderr %q; want 0", r.code, r.stderr)
		}
	})
}
