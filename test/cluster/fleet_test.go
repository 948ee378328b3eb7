package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/proctest"
)

// TestFleetThroughAPIServer: with deploy/ applied, `nodegc fleet` (as
// kubectl-nodegc, kubectl's plugin) shows the node's row from the NodeGC
// object its agent writes; enter opens the node's view, built from that
// object alone (nothing is sent to the node); q comes back; the row's
// last image GC attempt is the one `nodegc fleet -o json` reads. The
// cluster is the shared one (suite_test.go), its agent unchanged.
func TestFleetThroughAPIServer(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		kubetest.SkipOrFail(t, "tmux not installed (make deps installs it)")
	}
	c := sharedCluster(t)
	c.waitAgentReady(t)
	bin := fleetBinary(t)
	env := []string{"KUBECONFIG=" + c.cp.Admin, "TERM=xterm-256color"}

	s := newFleetSession(t, 200, 40, env, bin)
	s.waitFor(t, "the node's row from its agent's object", func(screen string) bool {
		return strings.Contains(screen, c.nodeName) && strings.Contains(screen, "1 agents ok")
	})
	s.press(t, "Enter")
	s.waitFor(t, "the node's view from its object", func(screen string) bool {
		return strings.Contains(screen, "nodegc fleet › "+c.nodeName) && strings.Contains(screen, "Last image pass")
	})
	s.press(t, "q")
	s.waitFor(t, "the fleet view again", func(screen string) bool {
		return strings.Contains(screen, "1 agents ok") && strings.Contains(screen, c.nodeName)
	})

	// The row's figures are the agent's latest image GC attempt, as
	// `nodegc fleet -o json` reads it. A periodic pass may land between a
	// screen and a read, so the JSON is read again at every look until
	// the screen has caught up with it.
	s.waitFor(t, "the fleet row showing the agent's last image GC attempt", func(screen string) bool {
		a := lastAttempt(t, bin, c.cp.Admin, c.nodeName)
		return a == nil && strings.Contains(screen, "never") || a != nil && strings.Contains(screen, a.Result+" "+a.Reason)
	})
}

// lastAttempt reads the node's last image GC attempt with `nodegc fleet
// -o json`; nil before one.
func lastAttempt(t *testing.T, bin, kubeconfig, node string) *v1alpha1.Pass {
	t.Helper()
	out, err := exec.Command(filepath.Join(filepath.Dir(bin), "nodegc"), "fleet", "-o", "json", "--kubeconfig", kubeconfig).Output()
	if err != nil {
		t.Fatalf("nodegc fleet -o json: %v", err)
	}
	var rows []fleet.Node
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("nodegc fleet -o json: %v: %s", err, out)
	}
	if len(rows) != 1 || rows[0].Name != node || rows[0].State != fleet.OK || rows[0].Status == nil {
		t.Fatalf("fleet rows %s, want the node with its agent's object", out)
	}
	return rows[0].Status.LastImagePass
}

// fleetBinary builds nodegc and links it as kubectl-nodegc (the plugin's
// name, which makes it `nodegc fleet`); it returns the link.
func fleetBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "nodegc")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nodegc/nodegc/cmd/nodegc").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	link := filepath.Join(dir, "kubectl-nodegc")
	if err := os.Symlink("nodegc", link); err != nil {
		t.Fatal(err)
	}
	return link
}

// fleetSession is a private tmux server running one program.
type fleetSession struct{ socket string }

func newFleetSession(t *testing.T, w, h int, env []string, argv ...string) *fleetSession {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &fleetSession{socket: proctest.TmuxSocket(t)}
	args := []string{"-f", conf, "new-session", "-d", "-s", "f", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "--", "env"}
	s.tmux(t, append(append(args, env...), argv...)...)
	return s
}

func (s *fleetSession) tmux(t *testing.T, args ...string) string {
	t.Helper()
	return proctest.Tmux(t, s.socket, args...)
}

func (s *fleetSession) capture(t *testing.T) string {
	return s.tmux(t, "capture-pane", "-p", "-t", "f")
}

func (s *fleetSession) press(t *testing.T, keys ...string) {
	s.tmux(t, append([]string{"send-keys", "-t", "f"}, keys...)...)
}

// waitFor polls the screen until ok, or fails with it after two minutes.
func (s *fleetSession) waitFor(t *testing.T, what string, ok func(string) bool) string {
	t.Helper()
	var screen string
	if !kubetest.WaitFor(2*time.Minute, func() bool {
		screen = s.capture(t)
		return ok(screen)
	}) {
		t.Fatalf("waiting for %s; the screen:\n%s", what, screen)
	}
	return screen
}
