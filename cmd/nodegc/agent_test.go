package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodegc/nodegc/agent"
	"github.com/nodegc/nodegc/internal/proctest"
)

// startProcess starts the binary with args and returns it with a channel
// of its stderr lines (closed at EOF). The process is killed at cleanup
// if the test did not end it.
func startProcess(t *testing.T, bin string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	p := proctest.Start(t, bin, args...)
	return p.Cmd, p.Lines
}

// waitLine returns the first line for which match is true, failing the
// test after timeout; seen collects every line read.
func waitLine(t *testing.T, lines <-chan string, seen *[]string, timeout time.Duration, match func(string) bool) string {
	t.Helper()
	return proctest.WaitLine(t, lines, seen, timeout, match)
}

// httpGet returns the status and body of GET url.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sample returns the value of the first sample of the exposition text
// whose line starts with prefix (a name and, optionally, labels).
func sample(body, prefix string) (float64, bool) {
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// agentSimnode serves a small simulated node (20 images, 4 pods, 2 dead
// instances a container) from `nodegc simnode` in a new temp dir, which
// it returns with the node's endpoint; t.Cleanup stops the node and
// removes the dir.
func agentSimnode(t *testing.T, bin, prefix string) (dir, ep string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ep = "unix://" + filepath.Join(dir, "sim.sock")
	sim, simLines := startProcess(t, bin, "simnode", "--listen", ep, "--images", "20", "--pods", "4", "--dead-per-container", "2", "--seed", "3")
	t.Cleanup(func() {
		sim.Process.Signal(syscall.SIGTERM)
		sim.Wait()
	})
	if l := <-simLines; !strings.Contains(l, "serving CRI on "+ep) {
		t.Fatalf("simnode's first line %q", l)
	}
	return dir, ep
}

// TestAgentBinary runs `nodegc agent` on a simulated node served by
// `nodegc simnode`: its periodic passes show in /metrics, it is ready,
// a second engine on its state dir is refused, SIGTERM ends it with exit
// 0, and a malformed metrics address is one line and exit 2 with nothing
// removed.
func TestAgentBinary(t *testing.T) {
	bin := buildBinary(t)
	dir, ep := agentSimnode(t, bin, "nodegc-agent-")
	stateDir := filepath.Join(dir, "state")
	common := []string{"--simulated", "--runtime-endpoint", ep, "--state-dir", stateDir, "--kubelet-config", os.DevNull, "--kubelet-pid", "-1"}

	t.Run("a malformed metrics address is one line and exit 2, and nothing is removed", func(t *testing.T) {
		// An address in use is not refused: the agent keeps trying it
		// (test/attacks, listener_test.go).
		addr := "127.0.0.1"
		code, stdout, stderr := runBinary(t, bin, append([]string{"agent", "--metrics-bind-address", addr}, common...)...)
		want := "nodegc: --metrics-bind-address: want host:port (localhost:" + agent.DefaultPort + ", :" + agent.DefaultPort + "), or 0 for none: address 127.0.0.1: missing port in address\n"
		if code != 2 || stdout != "" || stderr != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
		}
		if _, err := os.Stat(filepath.Join(stateDir, "journal.jsonl")); !os.IsNotExist(err) {
			t.Errorf("the refused agent opened a journal: %v", err)
		}
	})

	t.Run("without --simulated the agent refuses the simulated node: one line, exit 2, nothing removed", func(t *testing.T) {
		// An agent that took the node would serve until stopped: a minute
		// ends it, and it fails.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"agent", "--metrics-bind-address", "0"}, common[1:]...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		code, stdout, stderr := cmd.ProcessState.ExitCode(), out.String(), errb.String()
		want := "nodegc: the runtime at " + ep + " is a simulated node (nodegc simnode): pass --simulated, so that this machine's pod logs are not taken for its own\n"
		if code != 2 || stdout != "" || stderr != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
		}
		if _, err := os.Stat(filepath.Join(stateDir, "journal.jsonl")); !os.IsNotExist(err) {
			t.Errorf("the refused agent opened a journal: %v", err)
		}
	})

	addr := proctest.FreeAddress(t)
	agent, lines := startProcess(t, bin, append([]string{"agent", "--metrics-bind-address", addr,
		"--image-gc-period", "1500ms", "--container-gc-period", "1s",
		"--image-gc-high-threshold", "50", "--image-gc-low-threshold", "40", "--minimum-image-ttl-duration", "0"}, common...)...)
	var seen []string
	waitLine(t, lines, &seen, 30*time.Second, func(l string) bool {
		return strings.Contains(l, `"msg":"pass done"`) && strings.Contains(l, `"kind":"images"`)
	})

	t.Run("metrics after a periodic image pass", func(t *testing.T) {
		// The engine logs "pass done" before the scheduler hands the
		// report to the collector, and the line waited for is the image
		// pass's, not the container pass's: scrape until both passes
		// show. The minute is a bound on a hang, not on speed.
		const attempt = `nodegc_image_gc_attempts_total{reason="threshold",result="success",trigger="periodic"}`
		const removal = `nodegc_container_gc_removals_total{reason="per-container-limit",result="removed"}`
		var body string
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			var code int
			if code, body = httpGet(t, "http://"+addr+"/metrics"); code != http.StatusOK {
				t.Fatalf("/metrics: %d", code)
			}
			// Every series is there from the start, at 0: wait for counts.
			images, _ := sample(body, attempt)
			containers, _ := sample(body, removal)
			if images >= 1 && containers >= 1 || time.Now().After(deadline) {
				break
			}
		}
		if v, ok := sample(body, attempt); !ok || v < 1 {
			t.Errorf("no successful periodic image GC attempt above the threshold:\n%s", grepLines(body, "nodegc_image_gc_attempts_total"))
		}
		for _, s := range []string{
			`nodegc_image_gc_freed_bytes_total{measure="statfs",trigger="periodic"}`,
			`nodegc_image_gc_freed_bytes_total{measure="runtime",trigger="periodic"}`,
			`nodegc_image_gc_deletions_total{reason="space",result="removed"}`,
			removal,
			`nodegc_journal_lines_written_total{op="intent"}`,
		} {
			if v, ok := sample(body, s); !ok || v <= 0 {
				t.Errorf("%s = %v (found %v), want > 0", s, v, ok)
			}
		}
		if v, ok := sample(body, "nodegc_image_fs_usage_ratio "); !ok || v >= 0.5 {
			t.Errorf("image fs usage after the pass %v (found %v), want below the high threshold", v, ok)
		}
		if promtool, err := exec.LookPath("promtool"); err == nil {
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = strings.NewReader(body)
			if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		}
	})

	t.Run("healthz and readyz", func(t *testing.T) {
		if code, body := httpGet(t, "http://"+addr+"/healthz"); code != http.StatusOK {
			t.Errorf("/healthz: %d %q", code, body)
		}
		if code, body := httpGet(t, "http://"+addr+"/readyz"); code != http.StatusOK {
			t.Errorf("/readyz: %d %q", code, body)
		}
	})

	t.Run("a second agent on the same state dir exits 2", func(t *testing.T) {
		code, _, stderr := runBinary(t, bin, append([]string{"agent", "--metrics-bind-address", "0"}, common...)...)
		if code != 2 || !strings.Contains(stderr, "in use") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("SIGTERM ends it with exit 0, every stderr line JSON", func(t *testing.T) {
		agent.Process.Signal(syscall.SIGTERM)
		for l := range lines {
			seen = append(seen, l)
		}
		err := agent.Wait()
		if err != nil {
			t.Errorf("agent after SIGTERM: %v", err)
		}
		for _, l := range seen {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil {
				t.Errorf("stderr line not JSON: %q", l)
			}
		}
		if last := seen[len(seen)-1]; !strings.Contains(last, `"msg":"agent stopped"`) {
			t.Errorf("last line %q", last)
		}
	})
}

// grepLines returns the lines of body that contain s.
func grepLines(body, s string) string {
	var out []string
	for line := range strings.Lines(body) {
		if strings.Contains(line, s) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}
