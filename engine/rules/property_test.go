package rules

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/engine/wire"
)

// randomPolicy generates a valid policy, except that its PodLogsDir may
// be a relative one Validate refuses: the planner must stay safe even
// then (a plan of a policy no engine would accept touches no path
// outside the logs directories).
func randomPolicy(r *rand.Rand) model.Policy {
	p := model.DefaultPolicy()
	p.Image.HighThresholdPercent = r.IntN(101)
	p.Image.LowThresholdPercent = r.IntN(p.Image.HighThresholdPercent + 1)
	p.Image.MinAge = []time.Duration{0, time.Minute, 2 * time.Minute, time.Hour}[r.IntN(4)]
	if r.IntN(2) == 0 {
		p.Image.MaxAge = p.Image.MinAge + time.Duration(r.Int64N(int64(5*time.Hour))) + 1
	}
	p.Container.MinAge = []time.Duration{0, time.Minute, time.Hour}[r.IntN(3)]
	p.Container.MaxPerPodContainer = r.IntN(5) - 1
	p.Container.MaxContainers = r.IntN(12) - 1
	if err := p.Validate(); err != nil {
		panic(err)
	}
	p.PodLogsDir = []string{"", "/var/log/pods", "relative/pods"}[r.IntN(3)]
	return p
}

// checkPlanSafety returns every safety invariant the plan breaks.
func checkPlanSafety(s model.Snapshot, p model.Policy, kind model.PassKind, now time.Time, plan model.Plan) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	images := map[string]model.Image{}
	for _, img := range s.Images {
		if _, dup := images[img.ID]; !dup {
			images[img.ID] = img
		}
	}
	records := map[string]model.ImageRecord{}
	for _, r := range s.ImageRecords {
		if _, dup := records[r.ID]; !dup {
			records[r.ID] = r
		}
	}
	inUse := ImagesInUse(s.Images, s.Containers)
	seen := map[string]bool{}
	var freed int64
	for _, r := range plan.ImageGC.Remove {
		img, ok := images[r.ID]
		switch {
		case seen[r.ID]:
			fail("image %s removed twice", r.ID)
		case !ok:
			fail("image %s removed but not in the snapshot", r.ID)
		case img.Pinned:
			fail("pinned image %s removed", r.ID)
		case model.IsSandboxImage(img, s.Runtime.SandboxImages):
			fail("sandbox image %s removed", r.ID)
		case len(inUse[r.ID]) > 0:
			fail("image %s in use by %s removed", r.ID, inUse[r.ID][0].ID)
		}
		first := now
		if rec, ok := records[r.ID]; ok {
			first = rec.FirstDetected
		}
		if now.Sub(first) < p.Image.MinAge {
			fail("image %s younger than MinAge removed (age %s)", r.ID, now.Sub(first))
		}
		if (kind == model.PassReclaimAll) != (r.Reason == model.RemoveForReclaim) {
			fail("image %s removed for %s in a %s pass", r.ID, r.Reason, kind)
		}
		seen[r.ID] = true
		freed += r.SizeBytes
	}
	if freed != plan.ImageGC.BytesFreed {
		fail("bytesFreed %d, removals sum to %d", plan.ImageGC.BytesFreed, freed)
	}
	if kind != model.PassContainers && kind != "bogus" {
		for _, k := range plan.ImageGC.Keep {
			if seen[k.ID] {
				fail("image %s both removed and kept", k.ID)
			}
			seen[k.ID] = true
		}
		if len(seen) != len(images) || len(plan.ImageGC.Order) != len(images) {
			fail("%d images accounted for, %d in order, %d in the snapshot", len(seen), len(plan.ImageGC.Order), len(images))
		}
		if plan.ImageGC.CutLine < 0 || plan.ImageGC.CutLine > len(plan.ImageGC.Order) {
			fail("cut line %d outside the order of %d", plan.ImageGC.CutLine, len(plan.ImageGC.Order))
		}
	}

	containers := map[string]model.Container{}
	for _, c := range s.Containers {
		if _, dup := containers[c.ID]; !dup {
			containers[c.ID] = c
		}
	}
	removed := map[string]bool{}
	for _, r := range plan.ContainerGC.Remove {
		c, ok := containers[r.ID]
		switch {
		case removed[r.ID]:
			fail("container %s removed twice", r.ID)
		case !ok:
			fail("container %s removed but not in the snapshot", r.ID)
		case c.State == model.ContainerRunning:
			fail("running container %s removed", r.ID)
		case !IsDead(c.State):
			fail("container %s in state %s removed", r.ID, c.State)
		case c.CreatedAt.After(now.Add(-p.Container.MinAge)):
			fail("container %s younger than MinAge removed", r.ID)
		}
		removed[r.ID] = true
	}
	survivors := map[string]bool{}
	unitDead := map[evictUnit]int{}
	totalDead := 0
	for id, c := range containers {
		if removed[id] {
			continue
		}
		survivors[c.PodSandboxID] = true
		if IsDead(c.State) && !c.CreatedAt.After(now.Add(-p.Container.MinAge)) {
			unitDead[evictUnit{c.PodUID, c.Name}]++
			totalDead++
		}
	}
	if kind != model.PassImages && kind != "bogus" {
		if m := p.Container.MaxPerPodContainer; m >= 0 {
			for u, n := range unitDead {
				if n > m {
					fail("unit %v keeps %d dead containers, MaxPerPodContainer %d", u, n, m)
				}
			}
		}
		if m := p.Container.MaxContainers; m >= 0 && totalDead > m {
			fail("node keeps %d dead containers, MaxContainers %d", totalDead, m)
		}
	}

	sandboxes := map[string]model.Sandbox{}
	for _, sb := range s.Sandboxes {
		if _, dup := sandboxes[sb.ID]; !dup {
			sandboxes[sb.ID] = sb
		}
	}
	gone := map[string]bool{}
	for _, r := range plan.SandboxGC.Remove {
		sb, ok := sandboxes[r.ID]
		switch {
		case gone[r.ID]:
			fail("sandbox %s removed twice", r.ID)
		case !ok:
			fail("sandbox %s removed but not in the snapshot", r.ID)
		case sb.State != model.SandboxNotReady:
			fail("sandbox %s in state %s removed", r.ID, sb.State)
		case survivors[r.ID]:
			fail("sandbox %s removed while a surviving container references it", r.ID)
		}
		gone[r.ID] = true
	}

	paths := map[string]bool{}
	podLogsDir := p.PodLogsDir
	if podLogsDir == "" {
		podLogsDir = model.DefaultPodLogsDir
	}
	for _, r := range plan.LogGC.Remove {
		if paths[r.Path] {
			fail("log path %s removed twice", r.Path)
		}
		paths[r.Path] = true
		inside := false
		for _, dir := range []string{podLogsDir, model.ContainerLogsDir} {
			if filepath.IsAbs(dir) && filepath.Dir(r.Path) == filepath.Clean(dir) && filepath.Clean(dir) != "/" {
				inside = true
			}
		}
		if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path || !inside || strings.ContainsRune(r.Path, 0) {
			fail("unsafe log path %q", r.Path)
		}
	}
	if plan.ImageGC.Remove == nil || plan.ImageGC.Keep == nil || plan.ImageGC.Events == nil ||
		plan.ContainerGC.Remove == nil || plan.SandboxGC.Remove == nil || plan.LogGC.Remove == nil {
		fail("a plan list is nil")
	}
	return bad
}

func TestPlanPassProperties(t *testing.T) {
	kinds := []model.PassKind{model.PassImages, model.PassContainers, model.PassFull, model.PassReclaimAll}
	for seed := range uint64(1000) {
		r := rand.New(rand.NewPCG(seed, 0x6e6f64656763))
		s := nodetest.RandomSnapshot(r)
		p := randomPolicy(r)
		kind := kinds[r.IntN(len(kinds))]
		before := deepCopySnapshot(s)
		plan := PlanPass(s, p, kind, nodetest.T0)
		if bad := checkPlanSafety(s, p, kind, nodetest.T0, plan); len(bad) > 0 {
			t.Fatalf("seed %d, %s pass breaks the safety invariants:\n  %s", seed, kind, strings.Join(bad, "\n  "))
		}
		if !reflect.DeepEqual(s, before) {
			t.Fatalf("seed %d: planning modified the snapshot", seed)
		}
		if again := PlanPass(s, p, kind, nodetest.T0); !reflect.DeepEqual(plan, again) {
			t.Fatalf("seed %d: the same input gave two different %s plans", seed, kind)
		}
	}
}

func TestPlanIsIndependentOfListOrder(t *testing.T) {
	// Without duplicate IDs, the order in which the runtime lists images,
	// containers and sandboxes must not change the plan, apart from the
	// order of in-use details (the first user named) which we normalise.
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 42))
		s := nodetest.RandomSnapshot(r)
		p := randomPolicy(r)
		for _, kind := range []model.PassKind{model.PassFull, model.PassReclaimAll} {
			plan := PlanPass(s, p, kind, nodetest.T0)
			shuffled := deepCopySnapshot(s)
			r.Shuffle(len(shuffled.Images), func(i, j int) { shuffled.Images[i], shuffled.Images[j] = shuffled.Images[j], shuffled.Images[i] })
			r.Shuffle(len(shuffled.Sandboxes), func(i, j int) {
				shuffled.Sandboxes[i], shuffled.Sandboxes[j] = shuffled.Sandboxes[j], shuffled.Sandboxes[i]
			})
			r.Shuffle(len(shuffled.Containers), func(i, j int) {
				shuffled.Containers[i], shuffled.Containers[j] = shuffled.Containers[j], shuffled.Containers[i]
			})
			other := PlanPass(shuffled, p, kind, nodetest.T0)
			for _, pl := range []*model.Plan{&plan, &other} {
				for i := range pl.ImageGC.Keep {
					if pl.ImageGC.Keep[i].Reason == model.KeepInUse {
						pl.ImageGC.Keep[i].Detail = ""
					}
				}
			}
			if !reflect.DeepEqual(plan.ImageGC, other.ImageGC) || !reflect.DeepEqual(plan.ContainerGC, other.ContainerGC) ||
				!reflect.DeepEqual(plan.SandboxGC, other.SandboxGC) || !slices.Equal(nodetest.LogRemovals(plan.LogGC), nodetest.LogRemovals(other.LogGC)) {
				t.Fatalf("seed %d, %s: shuffling the runtime's lists changed the plan", seed, kind)
			}
		}
	}
}

// deepCopySnapshot copies a snapshot through its slices and pointers, so
// that a test can tell whether planning modified its input.
func deepCopySnapshot(s model.Snapshot) model.Snapshot {
	c := s
	c.Runtime.SandboxImages = slices.Clone(s.Runtime.SandboxImages)
	if s.RootFs != nil {
		r := *s.RootFs
		c.RootFs = &r
	}
	c.Images = slices.Clone(s.Images)
	for i := range c.Images {
		c.Images[i].RepoTags = slices.Clone(c.Images[i].RepoTags)
		c.Images[i].RepoDigests = slices.Clone(c.Images[i].RepoDigests)
	}
	c.ImageRecords = slices.Clone(s.ImageRecords)
	for i := range c.ImageRecords {
		if lu := c.ImageRecords[i].LastUsed; lu != nil {
			t := *lu
			c.ImageRecords[i].LastUsed = &t
		}
	}
	c.Sandboxes = slices.Clone(s.Sandboxes)
	c.Containers = slices.Clone(s.Containers)
	c.PodSource.RemovablePodUIDs = slices.Clone(s.PodSource.RemovablePodUIDs)
	if s.Logs != nil {
		l := *s.Logs
		l.PodDirs = slices.Clone(l.PodDirs)
		l.ContainerLinks = slices.Clone(l.ContainerLinks)
		c.Logs = &l
	}
	return c
}

func TestBigSnapshotIsValidAndPlansSafely(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-container snapshot")
	}
	s, data := nodetest.BigSnapshot()
	t.Run("the benchmark snapshot decodes", func(t *testing.T) {
		if _, err := wire.DecodeSnapshot(data); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the benchmark plan keeps every safety invariant", func(t *testing.T) {
		p := nodetest.BenchPolicy()
		plan := PlanPass(s, p, model.PassFull, nodetest.T0)
		if bad := checkPlanSafety(s, p, model.PassFull, nodetest.T0, plan); len(bad) > 0 {
			t.Fatalf("%d violations, first: %s", len(bad), bad[0])
		}
	})
}
