package main

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/internal/proctest"
)

// A dashboard on a node whose agent is slow to answer shows its first
// frame before the agent has answered its status call (issue 24: a
// dashboard attaching shows its first frame within 200 ms, also when the
// agent is busy): the tab bar and what it waits for. When the agent then
// refuses, the dashboard leaves the alternate screen before it says why,
// so the error stays on the terminal.
func TestDashboardDrawsBeforeTheAgentAnswers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a control socket an agent made is root's: needs root")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	if err := os.Mkdir(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The agent's double: it takes the status call and answers only when
	// the test lets it.
	sock := control.SocketPath(stateDir)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	asked, answer, gone := make(chan string, 8), make(chan struct{}), make(chan struct{}, 8)
	var once sync.Once
	let := func() { once.Do(func() { close(answer) }) }
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.URL.String()
		select {
		case <-answer:
		case <-r.Context().Done():
			gone <- struct{}{} // the dashboard gave up waiting
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(control.Error{Error: "the double says no", Code: control.CodeNotRoot})
	})}
	go srv.Serve(l)
	t.Cleanup(func() {
		let()
		srv.Close()
	})

	p := openTestPty(t, 120, 36)
	cmd := exec.Command(bin, "--kubelet-pid", "-1", "--kubelet-config", os.DevNull, "--state-dir", stateDir,
		"--runtime-endpoint", "unix://"+filepath.Join(dir, "no-runtime.sock"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.Slave, p.Slave, p.Slave
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "TMUX=", "CONTAINER_RUNTIME_ENDPOINT=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})

	select {
	case u := <-asked:
		if !strings.HasPrefix(u, "/v1/status") {
			t.Fatalf("the dashboard's first call is %s, not the status", u)
		}
	case err := <-done:
		t.Fatalf("the dashboard ended (%v) before it asked the agent anything:\n%s", err, p.Output())
	case <-time.After(30 * time.Second):
		t.Fatalf("the dashboard never asked the agent for its status:\n%s", p.Output())
	}
	// The status call is held: the frame must be on the terminal already.
	frame := "connecting to the agent through " + sock
	if !waitFor(p, 10*time.Second, "1 Overview", frame) {
		t.Fatalf("no first frame while the agent had not answered; the terminal got:\n%q", p.Output())
	}
	select {
	case <-gone:
		t.Fatal("the first frame came only once the dashboard had given up on the status call")
	default:
	}
	if out := p.Output(); !strings.Contains(out, ansi.SetModeAltScreenSaveCursor) {
		t.Errorf("the first frame is not in the alternate screen: %q", out)
	}

	let()
	var exitErr *exec.ExitError
	select {
	case err := <-done:
		if !errors.As(err, &exitErr) {
			t.Fatalf("the dashboard exited %v after the agent refused it, want an error exit", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the dashboard did not end after the agent refused it:\n%q", p.Output())
	}
	waitFor(p, 5*time.Second, "the double says no")
	out := p.Output()
	leave, said := strings.LastIndex(out, ansi.ResetModeAltScreenSaveCursor), strings.LastIndex(out, "the double says no")
	if leave < strings.Index(out, frame) || said < leave {
		t.Errorf("the error is not written after the alternate screen is left (left at %d, said at %d):\n%q", leave, said, out)
	}
}

// openTestPty opens a w×h pseudo-terminal; cleanup closes it.
func openTestPty(t *testing.T, w, h int) *proctest.Pty {
	t.Helper()
	p, err := proctest.OpenPty(w, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// waitFor reports whether everything drawn on p comes to contain each of
// subs (colours stripped) within timeout.
func waitFor(p *proctest.Pty, timeout time.Duration, subs ...string) bool {
	deadline := time.Now().Add(timeout)
	for {
		s := ansi.Strip(p.Output())
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(s, sub)
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
