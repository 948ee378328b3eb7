package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/internal/realnode"
)

func TestUpStatusDown(t *testing.T) {
	for _, rt := range realnode.Runtimes() {
		t.Run(rt.Name, func(t *testing.T) { testUpStatusDown(t, rt) })
	}
}

func testUpStatusDown(t *testing.T, rt realnode.Runtime) {
	if os.Geteuid() != 0 {
		if os.Getenv(realnode.RequireEnv) == "1" {
			t.Fatal("the sandbox needs root")
		}
		t.Skip("the sandbox needs root")
	}
	dir := filepath.Join(t.TempDir(), "sandbox")
	t.Cleanup(func() { _ = realnode.Cleanup(dir) })
	flags := []string{"--dir", dir, "--image-fs-mib", "96", "--image-mib", "3", "--runtime", rt.Name}

	var out bytes.Buffer
	if err := run(append([]string{"up"}, flags...), &out, &out); err != nil {
		if errors.Is(err, realnode.ErrUnavailable) && os.Getenv(realnode.RequireEnv) != "1" {
			t.Skipf("up: %v", err)
		}
		t.Fatalf("up: %v\n%s", err, out.String())
	}
	endpoint := "--runtime-endpoint unix://" + dir + "/containerd.sock"
	if !strings.Contains(out.String(), endpoint) {
		t.Errorf("up does not print %q:\n%s", endpoint, out.String())
	}
	if !strings.Contains(out.String(), "a real "+rt.Name+" ") {
		t.Errorf("up does not name the runtime %s:\n%s", rt.Name, out.String())
	}
	s, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !alive(s) || len(s.Images) < 3 || len(s.Workload) != 4 || s.Runtime != rt.Name {
		t.Errorf("state after up: %+v", s)
	}

	out.Reset()
	if err := run(append([]string{"status"}, flags...), &out, &out); err != nil || !strings.Contains(out.String(), "is up") {
		t.Errorf("status: %v\n%s", err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if pct, ok := strings.CutPrefix(line, "nodegc sandbox is up"); ok && !strings.Contains(pct, "image fs 8") && !strings.Contains(pct, "image fs 9") {
			t.Errorf("status reports usage below the high threshold: %q", line)
		}
	}

	out.Reset()
	if err := run(append([]string{"down"}, flags...), &out, &out); err != nil {
		t.Fatalf("down: %v\n%s", err, out.String())
	}
	if ms, _ := realnode.MountsUnder(dir); len(ms) > 0 {
		t.Errorf("still mounted after down: %v", ms)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after down (%v)", dir, err)
	}
}

func TestUnknownRuntime(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"up", "--runtime", "cri-o"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), `-runtime: runtime "cri-o"`) {
		t.Errorf("up --runtime cri-o = %v, want an error naming the flag", err)
	}
}

func TestUnknownCommand(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"sideways"}, &out, &out); err == nil || !strings.Contains(err.Error(), `unknown command "sideways"`) {
		t.Errorf("run(sideways) = %v, want an unknown command error", err)
	}
}

// Issue 23 item 20: the sandbox prints a whole command that stays inside
// it, not only the endpoint.
func TestPrintCommandStaysInside(t *testing.T) {
	var out bytes.Buffer
	s := state{Endpoint: "unix:///tmp/sb/containerd.sock", PodLogsDir: "/tmp/sb/pods", ImageFs: "/tmp/sb/root"}
	printCommand(&out, "/tmp/sb", s)
	for _, want := range []string{"--runtime-endpoint unix:///tmp/sb/containerd.sock", "--state-dir /tmp/sb/nodegc-state",
		"--pod-logs-dir /tmp/sb/pods", "--kubelet-config /dev/null", "--kubelet-pid -1", "--pod-source off"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the printed command lacks %q:\n%s", want, out.String())
		}
	}
}
