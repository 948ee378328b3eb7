package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// buildBinary builds nodegc into a temp dir, as `make build` does.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "nodegc")
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version=v9.9.9-test", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runBinary runs the binary with stdin from /dev/null (not a terminal)
// and returns its exit code, stdout and stderr.
func runBinary(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "CONTAINER_RUNTIME_ENDPOINT=")
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return -1, "", ""
}

func TestBinary(t *testing.T) {
	bin := buildBinary(t)
	snap := writeFile(t, "snap.json", snapshotJSON)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string // the whole of stderr
	}{
		{"version carries the ldflags version", []string{"version"}, 0, "nodegc v9.9.9-test (", ""},
		{"--version", []string{"--version"}, 0, "nodegc v9.9.9-test\n", ""},
		{"plan from a snapshot as JSON", []string{"plan", "--from", snap, "-o", "json", "--now", "2026-01-02T15:04:05Z"}, 0, `"evaluatedAt":"2026-01-02T15:04:05Z"`, ""},
		{"a bad flag exits 2 with one line", []string{"plan", "--image-gc-low-threshold", "90", "--from", snap}, 2, "",
			"nodegc: --image-gc-low-threshold: 90 must not exceed --image-gc-high-threshold 85\n"},
		{"gc with stdin not a terminal exits 2", []string{"gc", "--runtime-endpoint", "unix:///nonexistent/x.sock"}, 2, "",
			"nodegc: gc: stdin is not a terminal, so nobody can confirm; pass --yes to remove without confirmation, or --dry-run to preview\n"},
		{"an unreachable runtime exits 1", []string{"plan", "--runtime-endpoint", "unix:///nonexistent/x.sock"}, 1, "",
			"nodegc: --runtime-endpoint: runtime unavailable: no socket at unix:///nonexistent/x.sock\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runBinary(t, bin, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout %q lacks %q", stdout, tt.stdout)
			}
			if stderr != tt.stderr {
				t.Errorf("stderr\n got %q\nwant %q", stderr, tt.stderr)
			}
		})
	}

	t.Run("simnode serves until SIGTERM, and plan against it exits 0", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "nodegc-bin-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		ep := "unix://" + filepath.Join(dir, "sim.sock")
		sim := exec.Command(bin, "simnode", "--listen", ep, "--images", "5", "--pods", "2", "--dead-per-container", "1", "--seed", "3")
		pipe, err := sim.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.Start(); err != nil {
			t.Fatal(err)
		}
		defer sim.Process.Kill()
		// simnode says it serves once the socket listens.
		stderrLines := bufio.NewScanner(pipe)
		if !stderrLines.Scan() || !strings.Contains(stderrLines.Text(), "serving CRI on "+ep) {
			t.Fatalf("simnode's first line %q", stderrLines.Text())
		}
		sock := filepath.Join(dir, "sim.sock")
		if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("socket %v %v, want mode 0600", fi, err)
		}
		code, stdout, stderr := runBinary(t, bin, "plan", "--simulated", "--runtime-endpoint", ep, "--state-dir", filepath.Join(dir, "state"), "--kubelet-config", os.DevNull)
		if code != 0 || !strings.Contains(stdout, "Runtime:     simnode") {
			t.Errorf("plan exit %d stderr %q stdout %q", code, stderr, stdout)
		}
		sim.Process.Signal(syscall.SIGTERM)
		var rest []string
		for stderrLines.Scan() {
			rest = append(rest, stderrLines.Text())
		}
		if err := sim.Wait(); err != nil {
			t.Errorf("simnode after SIGTERM: %v (stderr %q)", err, rest)
		}
		if len(rest) != 1 || rest[0] != "simnode: stopped" {
			t.Errorf("simnode stderr after SIGTERM %q", rest)
		}
	})
}
