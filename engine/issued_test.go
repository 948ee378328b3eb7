package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/executor"
)

// issuedNode is a node at 90% image fs usage with an old unused image, a
// just-pulled one (too young under MinAge) and a pod with two dead
// instances of one container: a full pass removes the old image and
// the older instance, and keeps the young image and the newest instance.
func issuedNode(t *testing.T) (*fakeRuntime, *Engine, *time.Time) {
	t.Helper()
	rt := newFakeRuntime()
	deadContainers(rt)
	rt.Images["old"] = Image{ID: "old", SizeBytes: 10}
	now := execNow.Add(-time.Hour)
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: t.TempDir(),
		Now: func() time.Time { return now }, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	// The old image is first seen an hour ago, the young one now.
	if _, err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	now = execNow
	rt.Images["young"] = Image{ID: "young", SizeBytes: 10}
	return rt, e, &now
}

func TestApplyIssuedAppliesOnlyWhatTheEngineIssued(t *testing.T) {
	cases := []struct {
		name string
		// edit turns the issued plan into the one applied.
		edit func(p Plan) Plan
		// err is the error ApplyIssued must return; nil: it applies.
		err error
		// removed lists the mutating calls the runtime must have seen.
		removed []string
	}{
		{
			name:    "the plan as issued is applied",
			edit:    func(p Plan) Plan { return p },
			removed: []string{"RemoveContainer old", "RemoveImage old"},
		},
		{
			name: "a part of the plan issued is applied (the dashboard's remove-one)",
			edit: func(p Plan) Plan {
				p.ContainerGC.Remove = nil
				return p
			},
			removed: []string{"RemoveImage old"},
		},
		{
			name: "an image the policy keeps as too young, added, is refused",
			edit: func(p Plan) Plan {
				p.ImageGC.Remove = append(p.ImageGC.Remove, ImageRemoval{ID: "young", SizeBytes: 10, Reason: RemoveForSpace})
				return p
			},
			err: ErrUnknownPlan,
		},
		{
			name: "the newest dead instance of a container, added, is refused",
			edit: func(p Plan) Plan {
				p.ContainerGC.Remove = append(p.ContainerGC.Remove, ContainerRemoval{ID: "new", PodUID: "u1", Name: "app", Reason: RemovePerContainerLimit})
				return p
			},
			err: ErrUnknownPlan,
		},
		{
			name: "a target raised past the plan's is refused",
			edit: func(p Plan) Plan {
				p.ImageGC.BytesToFree = 1 << 62
				return p
			},
			err: ErrUnknownPlan,
		},
		{
			name: "a removal's reason changed is refused",
			edit: func(p Plan) Plan {
				p.ImageGC.Remove = slices.Clone(p.ImageGC.Remove)
				p.ImageGC.Remove[0].Reason = RemoveForAge
				return p
			},
			err: ErrUnknownPlan,
		},
		{
			name: "a plan of another evaluation time is refused",
			edit: func(p Plan) Plan {
				p.EvaluatedAt = p.EvaluatedAt.Add(-time.Second)
				return p
			},
			err: ErrUnknownPlan,
		},
		{
			name: "a plan of another pass kind is refused",
			edit: func(p Plan) Plan {
				p.Pass = PassReclaimAll
				return p
			},
			err: ErrUnknownPlan,
		},
		{
			name: "a container with an empty ID is refused as malformed",
			edit: func(p Plan) Plan {
				p.ContainerGC.Remove = append(p.ContainerGC.Remove, ContainerRemoval{ID: "", PodUID: "u1", Name: "app"})
				return p
			},
			err: ErrBadPlan,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt, e, _ := issuedNode(t)
			issued, err := e.Plan(context.Background(), PassFull)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(removalIDs(issued), []string{"old", "old"}) {
				t.Fatalf("issued plan removes %v, want the old container and the old image", removalIDs(issued))
			}
			_, err = e.ApplyIssued(context.Background(), tc.edit(issued))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if got := rt.MutatingCalls(); !slices.Equal(got, tc.removed) {
				t.Errorf("mutating calls %v, want %v", got, tc.removed)
			}
			lines, err := ReadJournalLines(e.o.StateDir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.err != nil && len(lines) != 0 {
				t.Errorf("a refused plan wrote %d journal lines: %+v", len(lines), lines)
			}
		})
	}
}

func TestApplyIssuedRefusesAPlanNeverIssued(t *testing.T) {
	rt, e, _ := issuedNode(t)
	forged := Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{Triggered: true, BytesToFree: 1 << 62,
		Remove: []ImageRemoval{{ID: "young", SizeBytes: 10, Reason: RemoveForSpace}}}}
	if _, err := e.ApplyIssued(context.Background(), forged); !errors.Is(err, ErrUnknownPlan) {
		t.Fatalf("err = %v, want ErrUnknownPlan", err)
	}
	if got := rt.MutatingCalls(); len(got) != 0 {
		t.Errorf("mutating calls %v, want none", got)
	}
}

func TestApplyIssuedForgetsPlansPastMaxPlanAge(t *testing.T) {
	_, e, now := issuedNode(t)
	issued, err := e.Plan(context.Background(), PassContainers)
	if err != nil {
		t.Fatal(err)
	}
	*now = now.Add(MaxPlanAge + time.Second)
	if _, err := e.ApplyIssued(context.Background(), issued); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("err = %v, want ErrStalePlan", err)
	}
	if got := e.MaxApplyBytes(); got != applyBytesNone {
		t.Errorf("MaxApplyBytes past MaxPlanAge: %d, want %d", got, applyBytesNone)
	}
	if n := len(e.issued.plans); n != 0 {
		t.Errorf("%d plans remembered past MaxPlanAge", n)
	}
}

func TestMaxApplyBytesFollowsTheNode(t *testing.T) {
	_, e, _ := issuedNode(t)
	if got := e.MaxApplyBytes(); got != applyBytesNone {
		t.Errorf("before any plan: %d, want %d", got, applyBytesNone)
	}
	if _, err := e.Plan(context.Background(), PassFull); err != nil {
		t.Fatal(err)
	}
	// 2 images, 2 containers, 1 sandbox.
	if got, want := e.MaxApplyBytes(), int64(applyBytesBase+5*applyBytesPerObject); got != want {
		t.Errorf("after a plan of 5 objects: %d, want %d", got, want)
	}
}

func TestValidItemsRefusesWhatNoRuntimeNames(t *testing.T) {
	cases := []struct {
		name string
		plan Plan
	}{
		{"an empty image ID", Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: ""}}}}},
		{"an empty sandbox ID", Plan{SandboxGC: SandboxPlan{Remove: []SandboxRemoval{{ID: ""}}}}},
		{"a control character in a container ID", Plan{ContainerGC: ContainerPlan{Remove: []ContainerRemoval{{ID: "abc\x1b[2J"}}}}},
		{"a space in an image ID", Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "sha256:a b"}}}}},
		{"an ID longer than any runtime's", Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: string(make([]byte, maxIDBytes+1))}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := validItems(tc.plan); !errors.Is(err, ErrBadPlan) {
				t.Errorf("err = %v, want ErrBadPlan", err)
			}
		})
	}
}

// removalIDs lists a plan's removals' IDs in execution order.
func removalIDs(p Plan) []string {
	items := executor.PlannedItems(p)
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// A pass's own plan, which the engine applies at once, is not issued: the
// engine keeps no digest of its removals (a megabyte for MaxPlanAge after
// a pass of 4,050 removals), and a client cannot apply it again; a plan
// previewed beside it still applies.
func TestAPassIssuesNoPlan(t *testing.T) {
	rt, e, _ := issuedNode(t)
	ctx := context.Background()
	for _, run := range []func(context.Context, PassKind) (PassReport, error){e.Run, e.RunPeriodic} {
		r, err := run(ctx, PassContainers)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(e.issued.plans); n != 0 {
			t.Fatalf("%d plans remembered after a pass", n)
		}
		if _, err := e.ApplyIssued(ctx, r.Plan); !errors.Is(err, ErrUnknownPlan) {
			t.Fatalf("a pass's plan applied again: err = %v, want ErrUnknownPlan", err)
		}
	}
	issued, err := e.Plan(ctx, PassImages)
	if err != nil {
		t.Fatal(err)
	}
	before := len(rt.MutatingCalls())
	if _, err := e.ApplyIssued(ctx, issued); err != nil {
		t.Fatalf("a previewed plan beside the passes: %v", err)
	}
	if got := rt.MutatingCalls()[before:]; !slices.Equal(got, []string{"RemoveImage old"}) {
		t.Errorf("mutating calls %v, want [RemoveImage old]", got)
	}
}
