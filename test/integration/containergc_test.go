package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestContainerGC runs container and sandbox GC on real dead containers and
// stopped sandboxes: the per-container limit and sandbox GC through the
// engine, the node limit through the binary.
func TestContainerGC(t *testing.T) { forEachRuntime(t, testContainerGC) }

func testContainerGC(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	img := realnode.SandboxImageRef
	state := t.TempDir()

	// Pod "job": three dead instances of "task" and a running "app".
	job := m.RunPod("job", "default", podUID("cgc-job"), "")
	var task []string
	for a := range uint32(3) {
		task = append(task, m.ExitedContainer(job, "task", img, a, 1))
	}
	app := m.StartContainer(job, "app", img, 0)
	// Pod "restarted": an older sandbox, stopped, with no containers, and
	// its newest sandbox, ready.
	restartedUID := podUID("cgc-restarted")
	oldSandbox := m.RunPod("restarted", "default", restartedUID, "")
	m.StopPod(oldSandbox)
	newSandbox := m.RunPod("restarted", "default", restartedUID, "")
	// Pod "stopped": two stopped sandboxes, no containers.
	stoppedUID := podUID("cgc-stopped")
	stopped0 := m.RunPod("stopped", "default", stoppedUID, "")
	m.StopPod(stopped0)
	stopped1 := m.RunPod("stopped", "default", stoppedUID, "")
	m.StopPod(stopped1)

	e := newEngine(t, n, engineOptions{Runtime: c, Policy: engine.DefaultPolicy(), StateDir: state})
	r, err := e.Run(context.Background(), engine.PassContainers)
	if err != nil {
		t.Fatalf("container pass: %v", err)
	}
	e.Close() // the binary takes the state dir below
	st := m.State()

	t.Run("the pass removes its items without errors", func(t *testing.T) {
		if !r.OK() || r.Count(engine.OutcomeRemoved) != len(r.Items) {
			t.Errorf("report: ok %v, items %+v", r.OK(), r.Items)
		}
	})

	t.Run("three dead instances of one container leave the newest with the default limit", func(t *testing.T) {
		got := itemsWith(r, engine.ItemContainer, engine.OutcomeRemoved)
		if !slices.Equal(got, task[:2]) {
			t.Errorf("removed containers %v, want the two oldest instances %v", got, task[:2])
		}
		for _, id := range task[:2] {
			if _, ok := st.Containers[id]; ok || item(t, r, id).Reason != string(engine.RemovePerContainerLimit) {
				t.Errorf("container %s: still listed %v, reason %q", id, ok, item(t, r, id).Reason)
			}
		}
		if st.Containers[task[2]] != "CONTAINER_EXITED" || st.Containers[app] != "CONTAINER_RUNNING" {
			t.Errorf("newest dead instance is %q and running app %q", st.Containers[task[2]], st.Containers[app])
		}
	})

	t.Run("older NOTREADY sandboxes without containers are stopped and removed", func(t *testing.T) {
		got := itemsWith(r, engine.ItemSandbox, engine.OutcomeRemoved)
		if !sameSet(got, []string{oldSandbox, stopped0}) {
			t.Errorf("removed sandboxes %v, want %v", got, []string{oldSandbox, stopped0})
		}
		for _, id := range []string{oldSandbox, stopped0} {
			if _, ok := st.Sandboxes[id]; ok {
				t.Errorf("sandbox %s still listed", id)
			}
			if why := item(t, r, id).Reason; why != engine.SandboxSuperseded {
				t.Errorf("sandbox %s removed as %q, want %q", id, why, engine.SandboxSuperseded)
			}
		}
		if got := journalIDs(t, state, engine.ItemSandbox, 0); !sameSet(got, []string{oldSandbox, stopped0}) {
			t.Errorf("journal sandboxes %v", got)
		}
	})

	t.Run("the newest sandbox of a pod stays, ready or not, and so does a sandbox with containers", func(t *testing.T) {
		for id, want := range map[string]string{newSandbox: "SANDBOX_READY", stopped1: "SANDBOX_NOTREADY", job: "SANDBOX_READY"} {
			if st.Sandboxes[id] != want {
				t.Errorf("sandbox %s is %q, want %s", id, st.Sandboxes[id], want)
			}
		}
	})

	t.Run("the node limit through the binary trims the dead containers to the maximum", func(t *testing.T) {
		// kubelet 1.36 orders dead containers by creation time only
		// (byCreated in pkg/kubelet/kuberuntime/kuberuntime_gc.go): the
		// oldest of all, task[2] (created before these, though at attempt
		// 2), goes to the node limit.
		podC := m.RunPod("c", "default", podUID("cgc-c"), "")
		y0 := m.ExitedContainer(podC, "y", img, 0, 0)
		podB := m.RunPod("b", "default", podUID("cgc-b"), "")
		x0 := m.ExitedContainer(podB, "x", img, 0, 0)
		x1 := m.ExitedContainer(podB, "x", img, 1, 0)
		// Dead now: task[2], x0, x1, y0.
		args := append([]string{"gc", "--containers", "--yes", "--maximum-dead-containers", "2", "-o", "json"}, cliFlags(t, n, state)...)
		res := runCLI(t, args...)
		if res.Code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", res.Code, res.Stderr)
		}
		var rep engine.PassReport
		decodeJSON(t, res, &rep)
		reasons := map[string]string{}
		for _, it := range rep.Items {
			if it.Kind == engine.ItemContainer && it.Outcome == engine.OutcomeRemoved {
				reasons[it.ID] = it.Reason
			}
		}
		want := map[string]string{x0: string(engine.RemovePerContainerLimit), task[2]: string(engine.RemoveNodeLimit)}
		if len(reasons) != len(want) || reasons[x0] != want[x0] || reasons[task[2]] != want[task[2]] {
			t.Errorf("removed %v, want %v", reasons, want)
		}
		var dead []string
		for id, s := range m.State().Containers {
			if s != "CONTAINER_RUNNING" {
				dead = append(dead, id)
			}
		}
		if !sameSet(dead, []string{y0, x1}) {
			t.Errorf("dead containers left %v, want the 2 newest by creation %v", dead, []string{y0, x1})
		}
	})
}
