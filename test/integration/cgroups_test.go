package integration

import (
	"context"
	"testing"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestCgroups reads the real kubepods tree that containerd made for the
// node's pods (cgroupfs driver, CgroupParent /kubepods/<qos>/pod<uid>) and
// names it from an engine snapshot.
func TestCgroups(t *testing.T) { forEachRuntime(t, testCgroups) }

func testCgroups(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	uid := podUID("cgroups-web")
	sb := m.RunPod("web", "shop", uid, realnode.QOSBestEffort)
	app := m.StartContainer(sb, "app", realnode.SandboxImageRef, 0)

	e := newEngine(t, n, engineOptions{Runtime: c, Policy: engine.DefaultPolicy()})
	s, err := e.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	names := &cgroupfs.NameMap{}
	for _, p := range s.Sandboxes {
		names.AddPod(p.PodUID, p.PodNamespace, p.PodName)
		names.AddContainer(p.ID, "POD", p.PodUID)
	}
	for _, ct := range s.Containers {
		names.AddContainer(ct.ID, ct.Name, ct.PodUID)
	}
	// The files of one tree are read one after another while the
	// container's start-up processes may still come and go, so a single
	// read can see a child larger than its parent. Read until the parent
	// covers its children; the subtests below fail if it never does.
	var pod, ct, pause *cgroupfs.Node
	var tree *cgroupfs.Tree
	realnode.Eventually(15*time.Second, func() bool {
		tree, err = cgroupfs.Read(cgroupfs.Config{CgroupDriver: string(cgroupfs.DriverCgroupfs)}, names)
		if err != nil || tree.Root == nil {
			return false
		}
		pod, ct, pause = nil, nil, nil
		walk(tree.Root, func(nd *cgroupfs.Node) {
			if nd.Kind == cgroupfs.KindPod && nd.Pod != nil && nd.Pod.UID == uid {
				pod = nd
			}
		})
		if pod == nil {
			return false
		}
		for _, ch := range pod.Children {
			switch {
			case ch.Container == nil:
			case ch.Container.ID == app:
				ct = ch
			case ch.Container.ID == sb:
				pause = ch
			}
		}
		return ct != nil && pause != nil && ct.MemoryBytes > 0 && ct.Pids > 0 &&
			pod.MemoryBytes >= ct.MemoryBytes && pod.Pids >= ct.Pids+pause.Pids
	})
	if err != nil {
		t.Fatalf("read cgroups: %v", err)
	}
	if tree.Root == nil {
		t.Fatalf("no kubepods tree: %v", tree.Errors)
	}
	if pod == nil {
		t.Fatalf("no pod node for %s in the tree (mode %s, driver %s, errors %v)", uid, tree.Mode, tree.Driver, tree.Errors)
	}

	t.Run("the pod is found at its cgroup parent with the sandbox's names", func(t *testing.T) {
		if pod.Path != "/kubepods/besteffort/pod"+uid || pod.QOS != realnode.QOSBestEffort {
			t.Errorf("pod node path %q qos %q", pod.Path, pod.QOS)
		}
		if pod.Pod.Name != "web" || pod.Pod.Namespace != "shop" {
			t.Errorf("pod named %s/%s, want shop/web", pod.Pod.Namespace, pod.Pod.Name)
		}
	})

	t.Run("the running container and the sandbox are named and the container has memory and pids", func(t *testing.T) {
		if ct == nil || pause == nil {
			t.Fatalf("pod children %v, want the container %s and the sandbox %s", pod.Children, app, sb)
		}
		if ct.Container.Name != "app" || pause.Container.Name != "POD" {
			t.Errorf("container named %q, sandbox %q", ct.Container.Name, pause.Container.Name)
		}
		if ct.MemoryBytes == 0 || ct.Pids == 0 {
			t.Errorf("running container: memory %d bytes, %d pids; want both > 0 (errors %v)", ct.MemoryBytes, ct.Pids, ct.Errors)
		}
		if pod.MemoryBytes < ct.MemoryBytes || pod.Pids < ct.Pids+pause.Pids {
			t.Errorf("pod memory %d pids %d, less than its children", pod.MemoryBytes, pod.Pids)
		}
	})
}

// walk calls fn on nd and every node below it.
func walk(nd *cgroupfs.Node, fn func(*cgroupfs.Node)) {
	fn(nd)
	for _, ch := range nd.Children {
		walk(ch, fn)
	}
}
