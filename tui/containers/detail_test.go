package containers

import (
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Issue 23 item 9: a pod's details say when the cgroup tree was read, and
// never show an exited container's cgroup usage as current.
func TestPodDetailCgroupAsOfAndExited(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	fin := now.Add(-time.Hour)
	s := engine.Snapshot{
		TakenAt:   now,
		Sandboxes: []engine.Sandbox{{ID: "sb1", PodUID: "uid-app", PodNamespace: "default", PodName: "app-1", State: engine.SandboxReady, CreatedAt: now.Add(-2 * time.Hour)}},
		Containers: []engine.Container{
			{ID: "c-old", PodSandboxID: "sb1", PodUID: "uid-app", Name: "app", Attempt: 2, State: engine.ContainerExited, CreatedAt: now.Add(-90 * time.Minute), FinishedAt: &fin},
			{ID: "c-new", PodSandboxID: "sb1", PodUID: "uid-app", Name: "app", Attempt: 3, State: engine.ContainerRunning, CreatedAt: now.Add(-time.Hour)},
		},
	}
	p := engine.PlanPass(s, engine.DefaultPolicy(), engine.PassFull, now)
	tree := &cgroupfs.Tree{Root: &cgroupfs.Node{Kind: cgroupfs.KindPod, Path: "/kubepods/podapp", Pod: &cgroupfs.PodRef{UID: "uid-app", Name: "app-1"},
		Children: []*cgroupfs.Node{
			{Kind: cgroupfs.KindContainer, Path: "/kubepods/podapp/c-old", Container: &cgroupfs.ContainerRef{ID: "c-old", Name: "app"}, MemoryBytes: 20 << 20},
			{Kind: cgroupfs.KindContainer, Path: "/kubepods/podapp/c-new", Container: &cgroupfs.ContainerRef{ID: "c-new", Name: "app"}, MemoryBytes: 30 << 20},
		}}}
	m := New(keys.Default(false), style.Default(true))
	m.SetSize(160, 30)
	m, _ = m.Update(feed.Snapshot{Snap: s, Plan: p, At: now})
	m, _ = m.Update(feed.Cgroups{Tree: tree, At: now.Add(-20 * time.Second)})
	m, _ = m.Update(feed.Clock{Now: now})
	d, ok := m.Detail()
	if !ok {
		t.Fatal("no details for the pod")
	}
	text := strings.Join(d.Lines, "\n")
	if !strings.Contains(text, "as of 11:59:40 (20s ago)") {
		t.Errorf("the CGROUP section does not say when the tree was read:\n%s", text)
	}
	for _, l := range d.Lines {
		if strings.Contains(l, "c-old") && strings.Contains(l, "memory") {
			t.Errorf("an exited container's cgroup usage is shown as current: %q", l)
		}
	}
}
