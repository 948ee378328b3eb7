package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"

	"github.com/nodegc/nodegc/internal/realnode"
)

// TestMinAge proves that MinAge protects every image on a first run with an
// empty state dir, and that a restarted nodegc (a new binary run, a new
// engine) keeps the first-detected times in the same state dir.
func TestMinAge(t *testing.T) { forEachRuntime(t, testMinAge) }

func testMinAge(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	imgs := ids(m.ImportImages(3, 0, "young"))
	// Thresholds that always trigger the space pass, so only MinAge keeps
	// the images.
	band := []string{"--images", "--image-gc-high-threshold", "1", "--image-gc-low-threshold", "0", "-o", "json"}

	t.Run("the binary keeps every image too young on a first run and after a restart with the same state dir", func(t *testing.T) {
		state := t.TempDir()
		args := append(append([]string{"gc", "--yes"}, cliFlags(t, n, state)...), band...)
		var runs [2]engine.PassReport
		for i := range runs {
			res := runCLI(t, args...)
			// Nothing old enough to free: FreeDiskSpaceFailed, and exit 1,
			// as the kubelet's GarbageCollect returns an error there.
			if res.Code != 1 || !strings.Contains(res.Stderr, "FreeDiskSpaceFailed") {
				t.Fatalf("run %d: exit %d, stderr:\n%s\nwant exit 1 with FreeDiskSpaceFailed", i+1, res.Code, res.Stderr)
			}
			decodeJSON(t, res, &runs[i])
			if got := runs[i].Count(engine.OutcomeRemoved); got != 0 || len(runs[i].Plan.ImageGC.Remove) != 0 {
				t.Errorf("run %d removed %d images, planned %v", i+1, got, runs[i].Plan.ImageGC.Remove)
			}
			if !runs[i].Plan.ImageGC.Triggered {
				t.Errorf("run %d: the space pass was not triggered at %d%%", i+1, runs[i].Plan.ImageGC.UsagePercent)
			}
		}
		first, second := keeps(runs[0].Plan.ImageGC), keeps(runs[1].Plan.ImageGC)
		for _, id := range imgs {
			k1, k2 := first[id], second[id]
			if k1.Reason != engine.KeepTooYoung || k2.Reason != engine.KeepTooYoung {
				t.Errorf("image %s kept for %q then %q, want %q both times", id, k1.Reason, k2.Reason, engine.KeepTooYoung)
				continue
			}
			if k1.EligibleAt == nil || k2.EligibleAt == nil || !k1.EligibleAt.Equal(*k2.EligibleAt) {
				t.Errorf("image %s eligible at %v on the first run, %v after the restart: first detection not kept", id, k1.EligibleAt, k2.EligibleAt)
			}
		}
		if !runs[1].Plan.EvaluatedAt.After(runs[0].Plan.EvaluatedAt) {
			t.Errorf("second run evaluated at %v, not after the first %v", runs[1].Plan.EvaluatedAt, runs[0].Plan.EvaluatedAt)
		}
		if listed := m.State().Images; !sameSet(listed, append(slices.Clone(imgs), n.SandboxImage().ID)) {
			t.Errorf("images after two runs %v", listed)
		}
	})

	t.Run("new engines over one state dir keep first detection and collect once MinAge has passed", func(t *testing.T) {
		state := t.TempDir()
		policy := imagePolicy(1, 0, engine.DefaultImageMinimumGCAge)
		t0 := time.Now().Truncate(time.Second)
		run := func(at time.Duration) (engine.Snapshot, engine.PassReport) {
			t.Helper()
			e := newEngine(t, n, engineOptions{Runtime: c, Policy: policy, StateDir: state, Clock: newClock(t0.Add(at))})
			defer e.Close() // each run is a new process over the state dir
			r, err := e.Run(context.Background(), engine.PassImages)
			if err != nil {
				t.Fatalf("pass at t0+%s: %v", at, err)
			}
			s, err := e.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return s, r
		}
		s1, r1 := run(0)
		s2, r2 := run(90 * time.Second)
		for _, r := range []engine.PassReport{r1, r2} {
			if got := r.Count(engine.OutcomeRemoved); got != 0 {
				t.Errorf("pass at %v removed %d images, want none (too young)", r.Plan.EvaluatedAt, got)
			}
			k := keeps(r.Plan.ImageGC)
			for _, id := range imgs {
				if k[id].Reason != engine.KeepTooYoung || k[id].EligibleAt == nil || !k[id].EligibleAt.Equal(t0.Add(policy.Image.MinAge)) {
					t.Errorf("pass at %v keeps %s as %+v, want too-young until t0+MinAge", r.Plan.EvaluatedAt, id, k[id])
				}
			}
		}
		rec1, rec2 := records(s1), records(s2)
		for _, id := range imgs {
			if !rec1[id].FirstDetected.Equal(t0) || !rec2[id].FirstDetected.Equal(t0) {
				t.Errorf("image %s first detected %v, then %v after a restart; want %v", id, rec1[id].FirstDetected, rec2[id].FirstDetected, t0)
			}
		}
		_, r3 := run(3 * time.Minute)
		if got := itemsWith(r3, engine.ItemImage, engine.OutcomeRemoved); !sameSet(got, imgs) || !r3.OK() {
			t.Errorf("pass at t0+3m removed %v, want the %d images now past MinAge: %+v", got, len(imgs), r3.Items)
		}
	})
}

// keeps maps an image plan's kept images by ID.
func keeps(p engine.ImagePlan) map[string]engine.ImageKeep {
	out := map[string]engine.ImageKeep{}
	for _, k := range p.Keep {
		out[k.ID] = k
	}
	return out
}

// records maps a snapshot's image records by ID.
func records(s engine.Snapshot) map[string]engine.ImageRecord {
	out := map[string]engine.ImageRecord{}
	for _, r := range s.ImageRecords {
		out[r.ID] = r
	}
	return out
}
