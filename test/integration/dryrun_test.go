package integration

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestDryRun proves that planning and dry-runs leave a real runtime exactly
// as it was, on a node where a real pass would remove images, dead
// containers and a sandbox.
func TestDryRun(t *testing.T) { forEachRuntime(t, testDryRun) }

func testDryRun(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	state := t.TempDir()

	m.ImportImages(3, 0, "dry")
	detectAt(t, n, c, state, time.Now().Add(-time.Hour)) // old enough to go
	job := m.RunPod("job", "default", podUID("dry-job"), "")
	for a := range uint32(2) {
		m.ExitedContainer(job, "task", realnode.SandboxImageRef, a, 0)
	}
	uid := podUID("dry-restarted")
	m.StopPod(m.RunPod("restarted", "default", uid, ""))
	m.RunPod("restarted", "default", uid, "")

	before := m.State()
	flags := append(cliFlags(t, n, state), "--image-gc-high-threshold", "1", "--image-gc-low-threshold", "0", "-o", "json")
	unchanged := func(t *testing.T) {
		t.Helper()
		if after := m.State(); !reflect.DeepEqual(before, after) {
			t.Errorf("the runtime changed:\nbefore %+v\nafter  %+v", before, after)
		}
		if js, err := engine.ReadJournal(state); err != nil || len(js) != 0 {
			t.Errorf("journal %v, %v: want empty", js, err)
		}
	}
	// wouldRemove checks that the plan is not empty, so that the runtime
	// staying the same proves something.
	wouldRemove := func(t *testing.T, p engine.Plan) {
		t.Helper()
		if len(p.ImageGC.Remove) != 3 || len(p.ContainerGC.Remove) != 1 || len(p.SandboxGC.Remove) != 1 {
			t.Errorf("plan removes %d images, %d containers, %d sandboxes; want 3, 1, 1", len(p.ImageGC.Remove), len(p.ContainerGC.Remove), len(p.SandboxGC.Remove))
		}
	}

	t.Run("nodegc plan changes nothing", func(t *testing.T) {
		res := runCLI(t, append([]string{"plan"}, flags...)...)
		if res.Code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", res.Code, res.Stderr)
		}
		var p engine.Plan
		decodeJSON(t, res, &p)
		wouldRemove(t, p)
		unchanged(t)
	})

	t.Run("nodegc gc --dry-run changes nothing", func(t *testing.T) {
		res := runCLI(t, append([]string{"gc", "--dry-run"}, flags...)...)
		if res.Code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", res.Code, res.Stderr)
		}
		var r engine.PassReport
		decodeJSON(t, res, &r)
		wouldRemove(t, r.Plan)
		if !r.DryRun || r.Count(engine.OutcomePlanned) != len(r.Items) || len(r.Items) != 5 {
			t.Errorf("dry-run report: dryRun %v, items %+v", r.DryRun, r.Items)
		}
		unchanged(t)
	})

	t.Run("nodegc gc --dry-run with the table says nothing was removed and changes nothing", func(t *testing.T) {
		res := runCLI(t, append([]string{"gc", "--dry-run"}, flags[:len(flags)-2]...)...)
		if res.Code != 0 || !strings.Contains(res.Stdout, "Dry run: nothing was removed.") {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
		}
		unchanged(t)
	})

	t.Run("an engine dry-run of a full pass changes nothing", func(t *testing.T) {
		e := newEngine(t, n, engineOptions{Runtime: c, Remover: forbidden{t}, Policy: imagePolicy(1, 0, engine.DefaultImageMinimumGCAge), StateDir: state})
		r, err := e.DryRun(context.Background(), engine.PassFull)
		if err != nil {
			t.Fatal(err)
		}
		wouldRemove(t, r.Plan)
		unchanged(t)
	})
}

// forbidden is a Remover that fails the test on any call.
type forbidden struct{ t *testing.T }

func (f forbidden) RemoveImage(_ context.Context, id string) error {
	f.t.Errorf("dry-run removed image %s", id)
	return nil
}

func (f forbidden) StopContainer(_ context.Context, id string, _ time.Duration) error {
	f.t.Errorf("dry-run stopped container %s", id)
	return nil
}

func (f forbidden) RemoveContainer(_ context.Context, id string) error {
	f.t.Errorf("dry-run removed container %s", id)
	return nil
}

func (f forbidden) StopSandbox(_ context.Context, id string) error {
	f.t.Errorf("dry-run stopped sandbox %s", id)
	return nil
}

func (f forbidden) RemoveSandbox(_ context.Context, id string) error {
	f.t.Errorf("dry-run removed sandbox %s", id)
	return nil
}
