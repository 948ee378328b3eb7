package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
)

// Issue 8 item 3: a state the CRI API does not define (a newer runtime may
// send one) is active. Such a container or sandbox is never stopped and
// never removed, by the planners or by the executor's re-check.

func TestUndefinedStatesArePlannedAsActive(t *testing.T) {
	odd := ContainerStateOther(7)
	s := nodetest.BaseSnapshot()
	s.Containers = []Container{
		{ID: "c-odd", PodSandboxID: "sb-old", PodUID: "p1", Name: "app", ImageID: "sha256:app", State: odd, CreatedAt: nodetest.Ago(48 * time.Hour)},
		nodetest.Dead("c-dead", "p1", "app", 1, time.Hour),
	}
	s.Sandboxes = []Sandbox{
		{ID: "sb-old", PodUID: "p1", State: SandboxNotReady, CreatedAt: nodetest.Ago(48 * time.Hour)},
		{ID: "sb-odd", PodUID: "p1", State: SandboxStateOther(2), CreatedAt: nodetest.Ago(24 * time.Hour)},
		{ID: "sb-p1", PodUID: "p1", State: SandboxReady, CreatedAt: nodetest.Ago(time.Hour)},
	}
	s.PodSource = PodSource{Ready: true, RemovablePodUIDs: []string{"p1"}}
	p := DefaultPolicy()
	p.Container.MaxPerPodContainer = 0
	p.Container.MaxContainers = 0
	plan := PlanPass(s, p, PassFull, nodetest.T0)
	t.Run("a container in an undefined state is not removed", func(t *testing.T) {
		if got := nodetest.ContainerRemovals(plan.ContainerGC); hasID(got, "c-odd") || !hasID(got, "c-dead") {
			t.Errorf("container removals %v, want c-dead and never c-odd", got)
		}
	})
	t.Run("a sandbox in an undefined state is not removed", func(t *testing.T) {
		if got := nodetest.SandboxRemovals(plan.SandboxGC); hasID(got, "sb-odd") {
			t.Errorf("sandbox removals %v include sb-odd", got)
		}
	})
	t.Run("a sandbox that a container in an undefined state references is not removed", func(t *testing.T) {
		if got := nodetest.SandboxRemovals(plan.SandboxGC); hasID(got, "sb-old") {
			t.Errorf("sandbox removals %v include sb-old, which c-odd references", got)
		}
	})
}

func TestRecheckKeepsUndefinedStates(t *testing.T) {
	rt := newFakeRuntime()
	rt.Containers["c1"] = Container{ID: "c1", PodUID: "p1", Name: "app", State: ContainerStateOther(7)}
	rt.Sandboxes["sb1"] = Sandbox{ID: "sb1", PodUID: "p1", State: SandboxStateOther(2)}
	e := newTestEngine(t, rt, false)
	plan := Plan{EvaluatedAt: execNow, Pass: PassContainers,
		ContainerGC: ContainerPlan{Remove: []ContainerRemoval{{ID: "c1", PodUID: "p1", Name: "app", Reason: RemovePerContainerLimit}}},
		SandboxGC:   SandboxPlan{Remove: []SandboxRemoval{{ID: "sb1", PodUID: "p1", Reason: SandboxSuperseded}}}}
	r, err := e.Apply(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range r.Items {
		if it.Outcome != OutcomeSkipped || !strings.Contains(it.Detail, "does not define") {
			t.Errorf("%s %s: outcome %s (%s), want skipped as active", it.Kind, it.ID, it.Outcome, it.Detail)
		}
	}
	if m := rt.MutatingCalls(); len(m) > 0 {
		t.Errorf("mutating calls %v, want none", m)
	}
}

func TestDecodeAcceptsUndefinedStates(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"CONTAINER_STATE_7", ""},
		{"CONTAINER_STATE_", "unknown value"},
		{"CONTAINER_STATE_x", "unknown value"},
	} {
		s := nodetest.BaseSnapshot()
		s.Containers = []Container{{ID: "c1", PodUID: "p", Name: "n", State: ContainerState(tt.in), CreatedAt: nodetest.T0}}
		err := s.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tt.in, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error with %q", tt.in, err, tt.want)
		}
	}
}

// hasID reports whether a list of "id" or "id:reason" names id.
func hasID(list []string, id string) bool {
	for _, s := range list {
		if s == id || strings.HasPrefix(s, id+":") {
			return true
		}
	}
	return false
}

// TestApplyRefusesPlansWithoutAPastEvaluationTime pins issue 8 item 11: a
// plan with a zero or future evaluation time cannot be applied.
func TestApplyRefusesPlansWithoutAPastEvaluationTime(t *testing.T) {
	for name, at := range map[string]time.Time{
		"zero evaluation time":   {},
		"future evaluation time": execNow.Add(time.Minute),
	} {
		t.Run(name, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.Images["i1"] = Image{ID: "i1", SizeBytes: 10}
			e := newTestEngine(t, rt, false)
			_, err := e.Apply(context.Background(), Plan{EvaluatedAt: at, Pass: PassImages,
				ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", SizeBytes: 10, Reason: RemoveForSpace}}}})
			if !errors.Is(err, ErrStalePlan) {
				t.Errorf("Apply = %v, want ErrStalePlan", err)
			}
			if m := rt.MutatingCalls(); len(m) > 0 {
				t.Errorf("mutating calls %v", m)
			}
		})
	}
}
