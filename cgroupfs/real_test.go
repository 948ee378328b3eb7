package cgroupfs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReadRealCgroupfs builds a kubepods tree in this machine's real
// /sys/fs/cgroup (v1 or hybrid), moves a child process into its container
// cgroup, and reads it back. It works under its own cgroupRoot so that a
// real kubepods tree is never touched, and removes everything it made.
func TestReadRealCgroupfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	layout, err := Discover(Config{})
	if err != nil {
		t.Skipf("no cgroup filesystem: %v", err)
	}
	if layout.Mode == ModeV2 {
		t.Skip("this test builds v1 hierarchies; cgroup v2 is covered by the fixtures and the integration suite")
	}
	const uid = "7e570000-0000-0000-0000-000000000001"
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cgroupRoot := fmt.Sprintf("/nodegc-test-%d", os.Getpid())
	leaf := cgroupRoot + "/kubepods/besteffort/pod" + uid + "/" + id

	// Create the container cgroup in every controller read, parents first;
	// remove them leaf first when the test ends.
	var dirs []string
	seen := map[string]bool{}
	for _, ctrl := range []string{"memory", "cpu", "cpuacct", "pids"} {
		mp, ok := layout.Mountpoint(ctrl, "/")
		if !ok || seen[mp] {
			continue
		}
		seen[mp] = true
		p := ""
		for _, part := range ParseCgroupfs(leaf) {
			p += "/" + part
			dir := mp + p
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatalf("create cgroup: %v", err)
			}
			dirs = append(dirs, dir)
		}
	}
	t.Cleanup(func() {
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil {
				t.Errorf("remove cgroup: %v", err)
			}
		}
	})

	// The child waits on stdin until it is in the container cgroup, then
	// writes 8 MiB (page cache charged to its memory cgroup), says so, and
	// waits on stdin again. It must be still from "ok" on: the tree reads
	// kubepods before the container, and a child that went on (an exec of
	// sleep did) was charged more in between, so the container read more
	// than its kubepods on CI's cgroup v1.
	file := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command("sh", "-c", `read _; head -c 8388608 /dev/zero > "$1"; echo ok; read _`, "sh", file)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for mp := range seen {
		if err := os.WriteFile(mp+leaf+"/cgroup.procs", []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move the child into %s: %v", mp+leaf, err)
		}
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ok\n" {
		t.Fatalf("child said %q, %v", line, err)
	}

	var names NameMap
	names.AddPod(uid, "default", "real-test")
	names.AddContainer(id, "worker", uid)
	tree, err := Read(Config{CgroupRoot: cgroupRoot}, &names)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := tree.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("read back:\n%s", text.String())
	if tree.Mode != layout.Mode || tree.Driver != DriverCgroupfs || tree.KubepodsPath != cgroupRoot+"/kubepods" {
		t.Errorf("mode %s driver %q kubepods %s", tree.Mode, tree.Driver, tree.KubepodsPath)
	}
	ctr := find(tree.Root, leaf)
	if ctr == nil {
		t.Fatalf("container cgroup %s not in the tree", leaf)
	}
	if ctr.Kind != KindContainer || ctr.Container.Name != "worker" || ctr.Pod.Name != "real-test" || ctr.QOS != QOSBestEffort {
		t.Errorf("container node %+v, container %+v, pod %+v", *ctr, ctr.Container, ctr.Pod)
	}
	if ctr.MemoryBytes < 1<<20 || ctr.Pids < 1 || ctr.CPUUsageNanos == 0 || len(ctr.Errors) != 0 {
		t.Errorf("container usage: memory %d, pids %d, cpu %dns, errors %v; want memory ≥ 1 MiB, pids ≥ 1, cpu > 0",
			ctr.MemoryBytes, ctr.Pids, ctr.CPUUsageNanos, ctr.Errors)
	}
	if tree.Root.MemoryBytes < ctr.MemoryBytes || tree.Root.Pids < ctr.Pids {
		t.Errorf("kubepods (memory %d, pids %d) holds less than its container", tree.Root.MemoryBytes, tree.Root.Pids)
	}
	if tree.Allocatable.CapacityMemoryBytes == 0 || tree.Allocatable.CapacityMilliCPU == 0 || tree.Allocatable.Kubepods == nil {
		t.Errorf("allocatable %+v", tree.Allocatable)
	}
}
