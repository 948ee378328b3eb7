// Package proctest runs a binary under test (nodegc, its agent, a helper
// server) and reads its stderr line by line, for tests that wait for a
// line before they go on.
package proctest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is a started binary and its stderr lines.
type Process struct {
	Cmd *exec.Cmd
	// Lines are its stderr lines, closed at EOF.
	Lines <-chan string
	// Seen holds every line WaitLine and Wait read.
	Seen []string
}

// Start starts bin with args, without CONTAINER_RUNTIME_ENDPOINT in its
// environment. It is killed at cleanup if the test did not end it.
func Start(tb testing.TB, bin string, args ...string) *Process {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CONTAINER_RUNTIME_ENDPOINT=") })
	pipe, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	lines := make(chan string, 4096)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	p := &Process{Cmd: cmd, Lines: lines}
	tb.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			p.Wait()
		}
	})
	return p
}

// WaitLine returns the first line for which match is true.
func (p *Process) WaitLine(tb testing.TB, timeout time.Duration, match func(string) bool) string {
	tb.Helper()
	return WaitLine(tb, p.Lines, &p.Seen, timeout, match)
}

// WaitLine returns the first of lines for which match is true, failing
// the test after timeout or at the end of lines; seen collects every line
// read.
func WaitLine(tb testing.TB, lines <-chan string, seen *[]string, timeout time.Duration, match func(string) bool) string {
	tb.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				tb.Fatalf("stderr ended before the line awaited; it was:\n%s", strings.Join(*seen, "\n"))
			}
			*seen = append(*seen, l)
			if match(l) {
				return l
			}
		case <-deadline:
			tb.Fatalf("no line awaited within %s; stderr so far:\n%s", timeout, strings.Join(*seen, "\n"))
		}
	}
}

// Contains matches a line that contains every one of subs.
func Contains(subs ...string) func(string) bool {
	return func(l string) bool {
		return !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(l, s) })
	}
}

// Wait reads the rest of stderr into Seen and waits for the process.
func (p *Process) Wait() error {
	for l := range p.Lines {
		p.Seen = append(p.Seen, l)
	}
	return p.Cmd.Wait()
}

// Stop ends the process with SIGTERM and waits for it; an exit other
// than 0 fails the test, with its stderr.
func (p *Process) Stop(tb testing.TB) {
	tb.Helper()
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if err := p.Wait(); err != nil {
		tb.Errorf("%s after SIGTERM: %v; stderr:\n%s", p.Cmd.Path, err, strings.Join(p.Seen, "\n"))
	}
}

// FreeAddress returns a loopback address nothing listens on now.
func FreeAddress(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TmuxSocket returns the socket path for a private tmux server (tmux -S
// path), in a directory of its own that the test's cleanup removes after
// ending the server: tmux leaves its socket file behind at kill-server. The
// directory is made under os.TempDir, not tb.TempDir, whose long paths can
// pass the 108 bytes a socket path may hold.
func TmuxSocket(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "nodegc-tmux-")
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	tb.Cleanup(func() {
		KillTmux(sock)
		_ = os.RemoveAll(dir)
	})
	return sock
}

// Tmux runs a tmux command on the private server on sock (tmux -S sock)
// and returns what it printed; a failure fails the test with its stderr.
func Tmux(tb testing.TB, sock string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// WaitPane polls the current pane of the private tmux server on sock
// until its screen shows what, and returns that screen; after timeout it
// fails the test with the last screen, and with what more returns (more
// may be nil), such as the stderr of the process behind the screen.
func WaitPane(tb testing.TB, sock string, timeout time.Duration, what string, more func() string) string {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var screen string
	for time.Now().Before(deadline) {
		if screen = Tmux(tb, sock, "capture-pane", "-p"); strings.Contains(screen, what) {
			return screen
		}
		time.Sleep(100 * time.Millisecond)
	}
	extra := ""
	if more != nil {
		extra = "\n" + more()
	}
	tb.Fatalf("the screen never showed %q:\n%s%s", what, screen, extra)
	return ""
}

// KillTmux ends the private tmux server on sock (tmux -S sock), if it is
// still there.
func KillTmux(sock string) { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() }
