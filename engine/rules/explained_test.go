package rules

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

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
	}
	s, _ := nodetest.BigSnapshot()
	check("the big node", s, nodetest.BenchPolicy(), model.PassFull)
}
