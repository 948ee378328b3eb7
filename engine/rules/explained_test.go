package rules

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
)

// TestPlanExplainedIsPlanPassAndExplain pins PlanExplained to PlanPass
// and Explain of its plan, field for field: over random snapshots and
// policies, every pass kind and an unknown one (each half of the
// explanation is told from its own half of the plan, which must be all
// it reads), and over a big node's full pass.
func TestPlanExplainedIsPlanPassAndExplain(t *testing.T) {
	kinds := []model.PassKind{model.PassImages, model.PassContainers, model.PassFull, model.PassReclaimAll, "unknown"}
	check := func(name string, s model.Snapshot, p model.Policy, kind model.PassKind) {
		t.Helper()
		want := PlanPass(s, p, kind, nodetest.T0)
		plan, explain := PlanExplained(s, p, kind, nodetest.T0)
		if !reflect.DeepEqual(plan, want) {
			t.Fatalf("%s, %s pass: PlanExplained's plan is not PlanPass's:\n got %+v\nwant %+v", name, kind, plan, want)
		}
		wantX := Explain(s, want)
		if x := explain(); !reflect.DeepEqual(x, wantX) {
			t.Fatalf("%s, %s pass: PlanExplained's explanation is not Explain's:\n got %+v\nwant %+v", name, kind, x, wantX)
		}
		if x := explain(); !reflect.DeepEqual(x, wantX) {
			t.Fatalf("%s, %s pass: explain called again gives another explanation", name, kind)
		}
	}
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 0x6578706c61696e))
		s := nodetest.RandomSnapshot(r)
		p := randomPolicy(r)
		for _, kind := range kinds {
			check(fmt.Sprintf("seed %d", seed), s, p, kind)
		}
		// Containers listed twice under one ID: PlanExplained finds a
		// container's removal by its place, Explain by its ID.
		s = withDuplicateContainers(r, s)
		for _, kind := range kinds {
			check(fmt.Sprintf("seed %d, IDs listed twice", seed), s, p, kind)
		}
	}
	s, _ := nodetest.BigSnapshot()
	check("the big node", s, nodetest.BenchPolicy(), model.PassFull)
}

// withDuplicateContainers is s with copies of some of its containers,
// each under the ID of the one it copies but in another state, created
// at another time, put back at random places after it.
func withDuplicateContainers(r *rand.Rand, s model.Snapshot) model.Snapshot {
	cs := slices.Clone(s.Containers)
	states := []model.ContainerState{model.ContainerRunning, model.ContainerExited, model.ContainerCreated}
	for range r.IntN(len(cs) + 1) {
		i := r.IntN(len(cs))
		c := cs[i]
		c.State, c.CreatedAt = states[r.IntN(len(states))], c.CreatedAt.Add(time.Duration(r.IntN(7200)-3600)*time.Second)
		cs = slices.Insert(cs, i+1+r.IntN(len(cs)-i), c)
	}
	s.Containers = cs
	return s
}

// TestSurvivingContainersByID: the survivors are the snapshot's
// containers whose ID the container plan does not remove, in snapshot
// order, with containers listed twice under one ID.
func TestSurvivingContainersByID(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 0x73757276))
		s := withDuplicateContainers(r, nodetest.RandomSnapshot(r))
		p := randomPolicy(r)
		plan, removedAt := planContainersAt(s, p.Container, nodetest.T0, removablePods(s))
		gone := map[string]bool{}
		for _, rm := range plan.Remove {
			gone[rm.ID] = true
		}
		var want []model.Container
		for _, c := range s.Containers {
			if !gone[c.ID] {
				want = append(want, c)
			}
		}
		if got := survivingContainers(s.Containers, removedAt); len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("seed %d: survivors %d, want %d: got %+v\nwant %+v", seed, len(got), len(want), got, want)
		}
	}
}
