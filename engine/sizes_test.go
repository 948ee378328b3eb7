package engine

import (
	"context"
	"testing"
)

// Issue 8 item 4: an image whose runtime-reported size is impossible (a
// wrapped unsigned size reads negative) is kept with a reason, and no sum
// of sizes wraps; before, the freed-bytes sum went negative and the space
// pass removed every eligible image.
func TestImpossibleSizes(t *testing.T) {
	t.Run("the executor skips an image whose size turned impossible", func(t *testing.T) {
		rt := newFakeRuntime()
		rt.Images["i1"] = Image{ID: "i1", SizeBytes: -1}
		e := newTestEngine(t, rt, false)
		r, err := e.Apply(context.Background(), Plan{EvaluatedAt: execNow, Pass: PassImages,
			ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", SizeBytes: 10, Reason: RemoveForSpace}}}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Items[0].Outcome != OutcomeSkipped || len(rt.MutatingCalls()) > 0 {
			t.Errorf("outcome %s, calls %v; want skipped and no call", r.Items[0].Outcome, rt.MutatingCalls())
		}
	})
}
