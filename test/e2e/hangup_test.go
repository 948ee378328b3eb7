package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDashboardEndsWithItsTerminal pins issue 8 item 9: closing the tmux
// session the dashboard runs in (what an SSH drop does) ends the dashboard
// as q does, and it removes the demo's temp dir. Both ways the terminal can
// go are covered: SIGHUP delivered, and SIGHUP ignored (a nohup'ed parent),
// where only the hung-up terminal tells.
func TestDashboardEndsWithItsTerminal(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	for _, tc := range []struct {
		name string
		wrap func(args []string) []string
	}{
		{"SIGHUP delivered", func(args []string) []string { return args }},
		{"SIGHUP ignored, the terminal hung up", func(args []string) []string {
			return []string{"sh", "-c", `trap "" HUP; exec "$@"`, "sh"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := shortTempDir(t)
			args := append([]string{"env", "TMPDIR=" + tmp}, demoArgs(bin)...)
			if w := tc.wrap(nil); w != nil {
				args = append(w, args...)
			}
			s := startSession(t, 100, 30, args...)
			s.waitText(t, "the Overview pane", overview...)
			if demos, _ := filepath.Glob(filepath.Join(tmp, "nodegc-demo-*")); len(demos) != 1 {
				t.Fatalf("demo dirs %v, want one while the dashboard runs", demos)
			}
			pid := s.pid
			s.tmux(t, "kill-session", "-t", s.name)
			deadline := time.Now().Add(waitTimeout)
			for alive(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("nodegc (pid %d) still runs %s after its terminal went away", pid, waitTimeout)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if demos, _ := filepath.Glob(filepath.Join(tmp, "nodegc-demo-*")); len(demos) != 0 {
				t.Errorf("the dashboard left %v behind", demos)
			}
		})
	}
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// shortTempDir is a temp dir for the demo's TMPDIR, removed in t.Cleanup:
// short, since the demo's socket path must fit in 108 bytes.
func shortTempDir(t *testing.T) string {
	t.Helper()
	tmp, err := os.MkdirTemp("", "ngc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	return tmp
}
