package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctest"
)

// attachNode is a simulated node served by `nodegc simnode` and the flags
// that point nodegc at it and at a state dir.
type attachNode struct {
	bin, dir, stateDir string
	common             []string
}

// startAttachNode serves a simulated node; cleanup stops it and removes
// the temp dir.
func startAttachNode(t *testing.T) attachNode {
	t.Helper()
	bin := buildBinary(t)
	dir, err := os.MkdirTemp("", "nodegc-attach-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ep := "unix://" + filepath.Join(dir, "sim.sock")
	sim, simLines := startProcess(t, bin, "simnode", "--listen", ep, "--images", "20", "--pods", "4", "--dead-per-container", "2", "--seed", "3")
	if l := <-simLines; !strings.Contains(l, "serving CRI on "+ep) {
		t.Fatalf("simnode's first line %q", l)
	}
	t.Cleanup(func() {
		sim.Process.Signal(syscall.SIGTERM)
		sim.Wait()
	})
	stateDir := filepath.Join(dir, "state")
	return attachNode{bin: bin, dir: dir, stateDir: stateDir,
		common: []string{"--simulated", "--runtime-endpoint", ep, "--state-dir", stateDir, "--kubelet-config", os.DevNull, "--kubelet-pid", "-1"}}
}

// startAgent starts an agent on the node with the periodic passes far
// off, and waits until its control socket answers. stderr returns what
// the agent has logged so far, for a failure's message.
func (n attachNode) startAgent(t *testing.T, extra ...string) (agent *exec.Cmd, stderr func() string) {
	t.Helper()
	args := append([]string{"agent", "--metrics-bind-address", "0", "--image-gc-period", "1h", "--container-gc-period", "1h",
		"--image-gc-high-threshold", "50", "--image-gc-low-threshold", "40"}, extra...)
	agent, lines := startProcess(t, n.bin, append(args, n.common...)...)
	var mu sync.Mutex
	var seen []string
	waitLine(t, lines, &seen, 30*time.Second, func(l string) bool { return strings.Contains(l, `"msg":"agent started"`) })
	go func() {
		for l := range lines { // keep the pipe drained
			mu.Lock()
			seen = append(seen, l)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		agent.Process.Signal(syscall.SIGTERM)
		agent.Wait()
	})
	return agent, func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(seen, "\n")
	}
}

// client returns a client of the agent's control socket.
func (n attachNode) client(t *testing.T, readOnly bool) *control.Client {
	c := control.NewClient(control.SocketPath(n.stateDir), readOnly)
	t.Cleanup(c.Close)
	return c
}

// TestAttach runs an agent on a simulated node and everything that
// attaches to it: plan, gc, a second agent, a read-only client, a
// non-root client, and a hung agent.
func TestAttach(t *testing.T) {
	n := startAttachNode(t)
	agent, _ := n.startAgent(t, "--minimum-image-ttl-duration", "2s")
	pid := strconv.Itoa(agent.Process.Pid)
	ctx := context.Background()

	t.Run("the socket is root's, mode 0600", func(t *testing.T) {
		fi, err := os.Lstat(control.SocketPath(n.stateDir))
		if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
			t.Fatalf("control socket: %v %v", fi.Mode(), err)
		}
		st, err := n.client(t, true).AgentStatus(ctx)
		if err != nil || strconv.Itoa(st.PID) != pid || st.Version != "v9.9.9-test" || !st.ReadOnly {
			t.Errorf("status %+v, %v", st, err)
		}
	})

	t.Run("plan through the agent equals the agent's own next pass", func(t *testing.T) {
		time.Sleep(2100 * time.Millisecond) // the agent's records age past the minimum TTL
		code, stdout, stderr := runBinary(t, n.bin, append([]string{"plan", "--images", "-o", "json"}, n.common...)...)
		if code != 0 {
			t.Fatalf("plan: exit %d, %s", code, stderr)
		}
		var p engine.Plan
		if err := json.Unmarshal([]byte(stdout), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.ImageGC.Remove) == 0 {
			t.Fatalf("the plan removes no image: the agent's records were not used\n%.600s", stdout)
		}
		r, err := n.client(t, false).Force(ctx, engine.PassImages)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Plan.ImageGC.Remove, p.ImageGC.Remove; !reflect.DeepEqual(got, want) {
			t.Errorf("the agent's pass removed %v, plan said %v", got, want)
		}
		if r.Count(engine.OutcomeRemoved) != len(p.ImageGC.Remove) {
			t.Errorf("the pass removed %d of %d", r.Count(engine.OutcomeRemoved), len(p.ImageGC.Remove))
		}
	})

	t.Run("gc --yes runs through the agent and prints its report", func(t *testing.T) {
		code, stdout, stderr := runBinary(t, n.bin, append([]string{"gc", "--containers", "--yes"}, n.common...)...)
		if code != 0 || !strings.Contains(stdout, "through agent pid "+pid) || !strings.Contains(stdout, "(containers):") {
			t.Fatalf("gc: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
		}
		reports, err := n.client(t, true).Reports(ctx)
		if err != nil || len(reports) == 0 {
			t.Fatalf("reports %v, %v", reports, err)
		}
		if last := reports[len(reports)-1]; last.Kind != engine.PassContainers || !last.Forced {
			t.Errorf("the agent's last pass %s forced %v, want the gc's containers pass", last.Kind, last.Forced)
		}
	})

	t.Run("a second agent exits 2 naming the first", func(t *testing.T) {
		code, _, stderr := runBinary(t, n.bin, append([]string{"agent", "--metrics-bind-address", "0"}, n.common...)...)
		if code != 2 || !strings.Contains(stderr, "(pid "+pid+")") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("a read-only client is refused every command", func(t *testing.T) {
		_, err := n.client(t, true).Force(ctx, engine.PassFull)
		var re *control.RemoteError
		if !errors.As(err, &re) || re.Reply.Code != control.CodeReadOnly {
			t.Errorf("force read-only: %v", err)
		}
		code, _, stderr := runBinary(t, n.bin, append([]string{"gc", "--read-only", "--yes"}, n.common...)...)
		if code != 2 {
			t.Errorf("gc --read-only --yes: exit %d %q", code, stderr)
		}
	})

	t.Run("a non-root client is refused", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root")
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("no setpriv")
		}
		// Open the way to the socket, so that only the agent's peer
		// check stands between uid 65534 and it.
		sock := control.SocketPath(n.stateDir)
		must(t, os.Chmod(n.dir, 0o711), os.Chmod(n.stateDir, 0o711), os.Chmod(sock, 0o666))
		defer func() { must(t, os.Chmod(n.stateDir, 0o700), os.Chmod(sock, 0o600), os.Chmod(n.dir, 0o700)) }()
		binDir := filepath.Join(n.dir, "bin")
		must(t, os.Mkdir(binDir, 0o755))
		bin := filepath.Join(binDir, "nodegc")
		data, err := os.ReadFile(n.bin)
		must(t, err, os.WriteFile(bin, data, 0o755))
		out, err := exec.Command(setpriv, append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", bin, "plan"}, n.common...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "uid 65534 is not root") || strings.Count(string(out), "\n") != 1 {
			t.Errorf("plan as uid 65534: %v\n%s", err, out)
		}
	})

	t.Run("a held lock with a socket that does not answer is one line and exit 2", func(t *testing.T) {
		agent.Process.Signal(syscall.SIGSTOP)
		defer agent.Process.Signal(syscall.SIGCONT)
		code, _, stderr := runBinary(t, n.bin, append([]string{"plan"}, n.common...)...)
		if code != 2 || !strings.Contains(stderr, "agent (pid "+pid+")") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
}

func must(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAgentRefusesPlantedSocket: a control socket path the agent did not
// create (a symlink, a socket of another uid) is one line and exit 2,
// and nothing is removed.
func TestAgentRefusesPlantedSocket(t *testing.T) {
	n := startAttachNode(t)
	sock := control.SocketPath(n.stateDir)
	must(t, os.Mkdir(n.stateDir, 0o700))
	tests := []struct {
		name  string
		plant func(t *testing.T)
		want  string
	}{
		{"a symlink", func(t *testing.T) { must(t, os.Symlink(filepath.Join(n.dir, "elsewhere"), sock)) }, "is a symlink"},
		{"a socket owned by uid 65534", func(t *testing.T) {
			l, err := net.Listen("unix", sock)
			must(t, err)
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
			must(t, os.Lchown(sock, 65534, 65534))
		}, "is owned by uid 65534"},
		{"a regular file", func(t *testing.T) { must(t, os.WriteFile(sock, nil, 0o600)) }, "is not a socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.plant(t)
			defer os.Remove(sock)
			before, _ := os.Lstat(sock)
			code, stdout, stderr := runBinary(t, n.bin, append([]string{"agent", "--metrics-bind-address", "0"}, n.common...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			after, err := os.Lstat(sock)
			if err != nil || !os.SameFile(before, after) {
				t.Errorf("the planted path was changed: %v", err)
			}
			if _, err := os.Stat(filepath.Join(n.stateDir, "journal.jsonl")); !os.IsNotExist(err) {
				t.Errorf("the refused agent opened a journal: %v", err)
			}
		})
	}
}

// TestDashboardAttaches opens the dashboard in tmux on a node with an
// agent: it says it is attached, previews and applies an image pass
// through the agent, and shows it.
func TestDashboardAttaches(t *testing.T) {
	_, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("no tmux")
	}
	n := startAttachNode(t)
	agent, agentLog := n.startAgent(t, "--minimum-image-ttl-duration", "0")
	sock := proctest.TmuxSocket(t)
	run := func(args ...string) string { return proctest.Tmux(t, sock, args...) }
	cmd := strings.Join(append([]string{"env", "CONTAINER_RUNTIME_ENDPOINT=", n.bin, "--refresh", "500ms"}, n.common...), " ")
	run("new-session", "-d", "-x", "200", "-y", "50", cmd)
	// Generous: the packages' tests share two cores in CI.
	waitScreen := func(what string) string {
		t.Helper()
		return proctest.WaitPane(t, sock, 60*time.Second, what, func() string { return "the agent's stderr:\n" + agentLog() })
	}
	waitScreen(fmt.Sprintf("attached to agent (pid %d, up", agent.Process.Pid))
	run("send-keys", "i")
	// The modal opens at once and plans the shown snapshot; y means
	// nothing until the plan is shown, then forces the agent's pass.
	waitScreen("y run the pass now")
	run("send-keys", "y")
	screen := waitScreen("#1 images")
	reports, err := n.client(t, true).Reports(context.Background())
	if err != nil || len(reports) != 1 || reports[0].Kind != engine.PassImages || reports[0].Count(engine.OutcomeRemoved) == 0 {
		t.Errorf("the agent's reports %v, %v\nscreen:\n%s", reports, err, screen)
	}
	// The journal view (L) shows the agent's journal, every line of it.
	journal, err := n.client(t, true).Journal(context.Background())
	if err != nil || len(journal) == 0 {
		t.Fatalf("the agent's journal: %d lines, %v", len(journal), err)
	}
	run("send-keys", "L")
	foot := fmt.Sprintf("last %d lines", len(journal))
	waitScreen(foot)
	// esc alone, and the view gone before the next key: tmux sends esc
	// and a key typed with it as one alt+key.
	run("send-keys", "Escape")
	for deadline := time.Now().Add(30 * time.Second); strings.Contains(run("capture-pane", "-p"), foot); {
		if time.Now().After(deadline) {
			t.Fatal("esc did not close the journal view")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// p pauses the agent in this dashboard's name (its pid on the socket)
	// while it stays: q says the pause ends, and it ends as it leaves.
	pid := strings.TrimSpace(run("display-message", "-p", "#{pane_pid}"))
	who := "uid 0 pid " + pid
	run("send-keys", "p")
	waitScreen("Ⅱ paused (" + who)
	if st, err := n.client(t, true).AgentStatus(context.Background()); err != nil || !st.Scheduler.Paused || st.Scheduler.PausedBy != who || !st.Scheduler.PauseHeld {
		t.Fatalf("the agent's status after p: %+v, %v; want a held pause by %s", st.Scheduler, err, who)
	}
	run("send-keys", "q")
	waitScreen("This dashboard's pause ends as it leaves")
	run("send-keys", "q")
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := n.client(t, true).AgentStatus(context.Background())
		if err == nil && !st.Scheduler.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent is still paused after the dashboard left: %+v, %v", st.Scheduler, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var resumed string
	for l := range strings.SplitSeq(agentLog(), "\n") {
		if strings.Contains(l, `"msg":"periodic passes resumed"`) {
			resumed = l
		}
	}
	for _, want := range []string{`"pausedBy":"` + who + `"`, `"endedBy":"` + who + `"`, `"reason":"its holder left"`} {
		if !strings.Contains(resumed, want) {
			t.Errorf("the agent's resume line %q lacks %s\nthe agent's log:\n%s", resumed, want, agentLog())
		}
	}
}
