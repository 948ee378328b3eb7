package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"

	"github.com/nodegc/nodegc/internal/proctest"
)

// requireEnv makes a missing tmux a failure instead of a skip (CI sets it,
// as for the real-runtime suite).
const requireEnv = "NODEGC_REQUIRE_CONTAINERD"

// waitTimeout bounds every wait for the screen: generous, since the demo
// warms up its simulated node before the first frame and CI machines are
// slow. Nothing is asserted about how fast the screen changes.
const waitTimeout = 20 * time.Second

// requireTmux skips the test when tmux is missing, or fails it under
// NODEGC_REQUIRE_CONTAINERD=1.
func requireTmux(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("tmux is missing and %s=1: install it (scripts/install-deps.sh)", requireEnv)
		}
		t.Skip("tmux is missing; install it (scripts/install-deps.sh) to run the end-to-end tests")
	}
}

// buildNodegc builds the binary under test into a temp dir.
func buildNodegc(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodegc")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nodegc/nodegc/cmd/nodegc")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// session is one dashboard running in a detached session of a private tmux
// server.
type session struct {
	socket string
	name   string
	// pid is the pane's process: nodegc itself.
	pid int
}

// startSession starts a private tmux server (its own socket, no user
// config) with one detached session of w×h running argv. The pane stays
// after the process exits (remain-on-exit), so its exit status can be read.
// The server is killed in t.Cleanup.
func startSession(t testing.TB, w, h int, argv ...string) *session {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	// remain-on-exit is set in the config, before the session exists, so
	// even a binary that exits at once leaves a dead pane to read.
	cfg := "set -g remain-on-exit on\nset -g status off\nset -g history-limit 0\n"
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &session{
		socket: proctest.TmuxSocket(t),
		name:   "e2e",
	}
	cmd := []string{"-f", conf, "new-session", "-d", "-s", s.name,
		"-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "--"}
	cmd = append(cmd, argv...)
	pane := -1 // the pane's process, once known, as a pidfd
	t.Cleanup(func() {
		// The server may already be gone; nothing else to clean.
		proctest.KillTmux(s.socket)
		waitExit(t, pane)
	})
	s.tmux(t, cmd...)
	pid, err := strconv.Atoi(strings.TrimSpace(s.tmux(t, "display-message", "-p", "-t", s.name, "#{pane_pid}")))
	if err != nil {
		t.Fatalf("pane pid: %v", err)
	}
	s.pid = pid
	if pane, err = unix.PidfdOpen(pid, 0); err != nil {
		pane = -1 // already gone: nothing to wait for
	}
	return s
}

// waitExit waits for the process behind pidfd to exit, so that what it
// writes on its way out (its state dir, after the server's end hangs up
// its terminal) is written before the test removes the dirs it made. A
// process still there a minute on is killed. The pidfd names that one
// process, never another that took its number; it is closed here.
func waitExit(t testing.TB, pidfd int) {
	if pidfd < 0 {
		return
	}
	defer unix.Close(pidfd)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for deadline := time.Now().Add(time.Minute); ; {
		left := time.Until(deadline)
		if left <= 0 {
			t.Logf("the pane's process outlived its tmux server by a minute: killed")
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
			return
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			return // exited (readable), or the pidfd cannot be polled
		}
	}
}

// tmux runs a tmux command on the session's server and returns its output.
func (s *session) tmux(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// screen returns the pane as plain text, one string per row.
func (s *session) screen(t testing.TB) []string {
	t.Helper()
	out := strings.TrimSuffix(s.tmux(t, "capture-pane", "-p", "-t", s.name), "\n")
	return strings.Split(out, "\n")
}

// joined returns the pane with wrapped lines joined (capture-pane -J), so a
// row the program wrote wider than the pane shows as one long line.
func (s *session) joined(t testing.TB) []string {
	t.Helper()
	out := strings.TrimSuffix(s.tmux(t, "capture-pane", "-p", "-J", "-t", s.name), "\n")
	return strings.Split(out, "\n")
}

// press sends keys as tmux key names ("Escape", "Enter", "q").
func (s *session) press(t testing.TB, keys ...string) {
	t.Helper()
	s.tmux(t, append([]string{"send-keys", "-t", s.name}, keys...)...)
}

// waitFor polls the screen until ok accepts it, and fails the test with the
// last screen when waitTimeout passes first.
func (s *session) waitFor(t testing.TB, what string, ok func(rows []string) bool) []string {
	t.Helper()
	return s.waitForWithin(t, waitTimeout, what, ok)
}

// waitForWithin is waitFor with a timeout of its own, for what the screen
// shows only after a while (a countdown read to the minute).
func (s *session) waitForWithin(t testing.TB, timeout time.Duration, what string, ok func(rows []string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rows := s.screen(t)
		if ok(rows) {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not on the screen after %s:\n%s", what, timeout, strings.Join(rows, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitText polls until every pattern matches somewhere on the screen.
func (s *session) waitText(t testing.TB, what string, patterns ...string) []string {
	t.Helper()
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = regexp.MustCompile(p)
	}
	return s.waitFor(t, what, func(rows []string) bool {
		text := strings.Join(rows, "\n")
		for _, re := range res {
			if !re.MatchString(text) {
				return false
			}
		}
		return true
	})
}

// waitGone polls until pattern no longer matches anywhere on the screen.
func (s *session) waitGone(t testing.TB, what, pattern string) []string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	return s.waitFor(t, what, func(rows []string) bool { return !re.MatchString(strings.Join(rows, "\n")) })
}

// exited reports whether the pane's process has exited, and how: its exit
// status ("0") or the signal that killed it ("signal 9"). tmux 3.3a now and
// then leaves a pane's process an unreaped zombie, with the pane dead and
// no status; the status is then read from /proc (exit_code, field 52).
func (s *session) exited(t *testing.T) (done bool, how string) {
	t.Helper()
	f := strings.Split(strings.TrimSpace(s.tmux(t, "display-message", "-p", "-t", s.name,
		"#{pane_dead}|#{pane_dead_status}")), "|")
	if len(f) == 2 && f[0] == "1" && f[1] != "" {
		return true, f[1]
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		// Reaped; tmux has the status on its next look.
		return false, ""
	}
	// Fields after the command name, which may hold spaces: state is 3.
	rest := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(rest) < 50 || rest[0] != "Z" {
		return false, ""
	}
	code, err := strconv.Atoi(rest[49])
	if err != nil {
		t.Fatalf("/proc/%d/stat: exit_code %q: %v", s.pid, rest[49], err)
	}
	if sig := code & 0x7f; sig != 0 {
		return true, fmt.Sprintf("signal %d", sig)
	}
	return true, strconv.Itoa(code >> 8)
}

// waitExit polls until the pane's process exits and returns how.
func (s *session) waitExit(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if done, how := s.exited(t); done {
			return how
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodegc still running %s after q:\n%s", waitTimeout, strings.Join(s.screen(t), "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkFrame fails when the dashboard's frame does not fit w columns: the
// tab bar must be the first row, a rule the second, the key help (short or
// full, both end with quit) the last non-blank row, and no row (wrapped rows joined) wider than w.
func checkFrame(t *testing.T, s *session, w int) {
	t.Helper()
	rows := s.screen(t)
	if !strings.HasPrefix(rows[0], "nodegc") || !strings.Contains(rows[0], "Overview") {
		t.Errorf("row 1 is not the tab bar: %q", rows[0])
	}
	if len(rows) < 2 || !strings.HasPrefix(rows[1], "───") {
		t.Errorf("row 2 is not the rule under the tab bar: %q", rows[1])
	}
	if last := lastNonBlank(rows); !strings.Contains(last, "quit") {
		t.Errorf("last row is not the key help (with q quit): %q", last)
	}
	for i, r := range s.joined(t) {
		if n := ansi.StringWidth(strings.TrimRight(r, " ")); n > w {
			t.Errorf("row %d is %d columns wide, the terminal %d: %q", i+1, n, w, r)
		}
	}
}

// lastNonBlank is the last row of the screen with text on it.
func lastNonBlank(rows []string) string {
	last := ""
	for _, r := range rows {
		if strings.TrimSpace(r) != "" {
			last = r
		}
	}
	return last
}

// demoArgs runs the dashboard on the default simulated node with a fixed
// seed, its periodic passes paused so that nothing is removed unless the
// test asks.
func demoArgs(bin string) []string {
	return []string{bin, "--demo", "--demo-seed", "1", "--paused"}
}

// overview matches the Overview pane once it has drawn.
var overview = []string{`IMAGE FILESYSTEM`, `RUNTIME\s+simnode`}

// panes are the pane keys with what each pane shows that no other does.
var panes = []struct {
	key, name string
	want      []string
}{
	{"2", "the Images pane: its table and the cut line", []string{`#[▲▼]?\s+IMAGE\s+(ID\s+)?SIZE`, `cut line`}},
	{"3", "the Containers pane: dead containers by pod", []string{`POD / CONTAINER[▲▼]?\s+ATTEMPT\s+EXIT`, `\(\d+ dead`}},
	// The demo's simulated cgroup v2 tree, read by the real reader: the
	// kubepods root, its QoS classes and pods with their usage.
	{"4", "the Cgroups pane: the kubepods tree", []string{`CGROUPS v2/systemd`, `▾ kubepods\s+\d`, `burstable`, `\(\d+\)`}},
	{"5", "the Events pane", []string{`(?i)no pass has run yet|PASS\s+KIND`}},
	{"1", "the Overview pane again", overview},
}

func TestDashboardDrivenInTmux(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	s := startSession(t, 100, 30, demoArgs(bin)...)

	s.waitText(t, "the Overview pane", overview...)
	checkFrame(t, s, 100)

	for _, p := range panes {
		t.Run("key "+p.key+" shows "+p.name, func(t *testing.T) {
			s.press(t, p.key)
			s.waitText(t, p.name, p.want...)
		})
	}

	t.Run("tab and shift+tab move between panes", func(t *testing.T) {
		s.press(t, "Tab")
		s.waitText(t, "the Images pane after tab", panes[0].want...)
		s.press(t, "BTab")
		s.waitText(t, "the Overview pane after shift+tab", overview...)
	})

	t.Run("? opens the full help listing the keys and closes it", func(t *testing.T) {
		s.press(t, "?")
		s.waitText(t, "the full help",
			`shift\+tab\s+prev pane`, `D\s+dry-run`, `p\s+pause/resume`,
			`i\s+image GC`, `x\s+container GC`, `R\s+reclaim all`,
			`r\s+refresh`, `f\s+freeze`, `y\s+yes, apply`, `esc/enter\s+cancel`, `q\s+quit`)
		s.press(t, "?")
		s.waitGone(t, "the full help to close", `shift\+tab\s+prev pane`)
	})

	t.Run("D opens the dry-run preview with totals and esc removes nothing", func(t *testing.T) {
		s.press(t, "D")
		rows := s.waitText(t, "the dry-run preview",
			`Dry-run`, `IMAGES \(\d+, [0-9.]+ [KMGT]?i?B\)`, `CONTAINERS \(\d+`, `esc`)
		// An image row: rank, reference, size, reason.
		if !regexp.MustCompile(`\d+\.\s+\S+\s+[0-9.]+ [KMGT]i?B\s+\S`).MatchString(strings.Join(rows, "\n")) {
			t.Errorf("the preview lists no image with its size and reason:\n%s", strings.Join(rows, "\n"))
		}
		s.press(t, "Escape")
		s.waitGone(t, "the preview to close", `Dry-run`)
		s.waitText(t, "the cancel notice", `nothing (was|is) removed`)
		s.press(t, "5")
		s.waitText(t, "the Events pane with no pass", `no pass has run yet`)
		s.press(t, "1")
		s.waitText(t, "the Overview pane", overview...)
	})

	t.Run("q quits with status 0 and restores the shell screen", func(t *testing.T) {
		s.press(t, "q")
		if status := s.waitExit(t); status != "0" {
			t.Errorf("nodegc exited with status %q, want 0", status)
		}
		// The alternate screen is gone: none of the dashboard stays.
		s.waitGone(t, "the dashboard to leave the screen", `IMAGE FILESYSTEM|1 Overview`)
	})
}

func TestDashboardFitsSmallTerminalAndReflows(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	s := startSession(t, 80, 24, demoArgs(bin)...)

	s.waitText(t, "the Overview pane at 80x24", overview...)
	checkFrame(t, s, 80)
	for _, p := range panes {
		t.Run("pane "+p.key+" fits 80x24", func(t *testing.T) {
			s.press(t, p.key)
			s.waitText(t, p.name, p.want...)
			checkFrame(t, s, 80)
		})
	}

	t.Run("the preview fits 80x24", func(t *testing.T) {
		s.press(t, "D")
		s.waitText(t, "the dry-run preview", `Dry-run`, `esc`)
		checkFrame(t, s, 80)
		s.press(t, "Escape")
		s.waitGone(t, "the preview to close", `Dry-run`)
	})

	t.Run("the full help fits 80x24", func(t *testing.T) {
		s.press(t, "?")
		s.waitText(t, "the full help", `shift\+tab`)
		checkFrame(t, s, 80)
		s.press(t, "?")
		s.waitGone(t, "the full help to close", `shift\+tab`)
	})

	t.Run("resizing to 120x40 and back reflows the frame", func(t *testing.T) {
		for _, size := range [][2]int{{120, 40}, {80, 24}} {
			w, h := size[0], size[1]
			s.tmux(t, "resize-window", "-t", s.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h))
			s.waitFor(t, fmt.Sprintf("the rule to span %d columns", w), func(rows []string) bool {
				return len(rows) == h && strings.TrimRight(rows[1], " ") == strings.Repeat("─", w) &&
					strings.Contains(lastNonBlank(rows), "quit") // the redraw reached the bottom
			})
			checkFrame(t, s, w)
		}
	})

	s.press(t, "q")
	if status := s.waitExit(t); status != "0" {
		t.Errorf("nodegc exited with status %q, want 0", status)
	}
}
