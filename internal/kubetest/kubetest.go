// Package kubetest holds what the tests that run real Kubernetes
// components share (test/kubelet, test/cluster, deploy/): where
// scripts/build-kube.sh put the binaries, skipping or failing when they
// are missing, and starting and ending long-running processes.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/realnode"
)

// Version is the k8s.io/kubernetes version tools/kube/go.mod requires;
// the default cache dir is keyed by it, as in scripts/build-kube.sh.
const Version = "v1.36.3"

// SkipOrFail skips the test with the reason, or fails it under
// NODEGC_REQUIRE_CONTAINERD=1, where CI wants every real test to run.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(realnode.RequireEnv) == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (set %s=1 to make this a failure)", append(args, realnode.RequireEnv)...)
}

// Dir is where scripts/build-kube.sh puts the binaries: $NODEGC_KUBE_DIR
// (set by the Makefile), else ${NODEGC_CACHE:-/var/cache/nodegc}/kube-<Version>.
func Dir() string {
	if dir := os.Getenv("NODEGC_KUBE_DIR"); dir != "" {
		return dir
	}
	cache := os.Getenv("NODEGC_CACHE")
	if cache == "" {
		cache = "/var/cache/nodegc"
	}
	return filepath.Join(cache, "kube-"+Version)
}

// Binary returns the path of a binary scripts/build-kube.sh built, or
// skips (fails in CI) naming make kube.
func Binary(t testing.TB, name string) string {
	t.Helper()
	dir := Dir()
	p := filepath.Join(dir, name)
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
		SkipOrFail(t, "%s not built in %s (run make kube)", name, dir)
	}
	return p
}

// FreePort returns a TCP port on loopback that is free right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartProcess starts a long-running helper in its own process group with
// its output in logFile and its working directory logFile's; t.Cleanup
// ends it (SIGTERM, then SIGKILL after 10 s), waits for it, and on a
// failed test logs the tail of its output.
func StartProcess(t testing.TB, logFile, bin string, args ...string) {
	t.Helper()
	StartProcessCmd(t, logFile, bin, args...)
}

// WaitFor reports whether cond becomes true within d, trying every 200 ms.
func WaitFor(d time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
	return true
}

// Tail returns the last lines of a file.
func Tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// RemovePods stops and removes every sandbox on the node, the kubelet's
// pods with their containers, once the kubelet is stopped.
func RemovePods(t testing.TB, n *realnode.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := n.RuntimeClient()
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Errorf("list sandboxes: %v", err)
		return
	}
	for _, s := range resp.GetItems() {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.GetId()}); err != nil {
			t.Errorf("stop sandbox %s: %v", s.GetId(), err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.GetId()}); err != nil {
			t.Errorf("remove sandbox %s: %v", s.GetId(), err)
		}
	}
}

// RemoveLinks removes the /var/log/containers links the kubelet made for
// this node's containers (they point into podLogsDir).
func RemoveLinks(t testing.TB, podLogsDir string) {
	t.Helper()
	const dir = "/var/log/containers"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		target, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(target, podLogsDir+"/") {
			continue
		}
		if err := os.Remove(p); err != nil {
			t.Errorf("remove %s: %v", p, err)
		}
	}
}

// UnmountUnder lazily unmounts whatever the kubelet mounted under dir, so
// t.TempDir can remove it.
func UnmountUnder(t testing.TB, dir string) {
	t.Helper()
	mounts, err := realnode.MountsUnder(dir)
	if err != nil {
		t.Logf("mounts under %s: %v", dir, err)
		return
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("unmount %s: %v", mounts[i], err)
		}
	}
}

// KubeletConfig is the KubeletConfiguration the tests' kubelets share, on
// a realnode: its CRI socket and podLogsDir, the cgroupfs driver without
// QoS cgroups (host-network pods, no node allocatable), no read-only or
// healthz port, and its API on port (anonymous, AlwaysAllow: these
// kubelets hold only the tests' pods). extra is appended (more fields).
func KubeletConfig(n *realnode.Node, port int, extra string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: %s
podLogsDir: %s
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
readOnlyPort: 0
port: %d
healthzPort: 0
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
`, n.Endpoint(), n.PodLogsDir(), port) + extra
}
