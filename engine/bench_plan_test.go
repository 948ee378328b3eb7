package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"
)

// bigSnapshot is a large node: 10,000 images (half of them used), 20,000
// pods each with a sandbox, and 100,000 dead containers (five per pod, in
// two container names), with the image fs 95% full, a ready pod source
// listing a tenth of the pods as removable, and a node limit, so that
// every step of every planner does real work.
var bigSnapshot = sync.OnceValues(func() (Snapshot, []byte) {
	const (
		nImages     = 10_000
		nPods       = 20_000
		perPod      = 5
		capacityGiB = 500
	)
	s := baseSnapshot()
	s.ImageFs = FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: capacityGiB << 30, AvailableBytes: capacityGiB << 30 / 20}
	s.Runtime.SandboxImages = []string{"registry.k8s.io/pause:3.9"}
	for i := range nImages {
		id := fmt.Sprintf("sha256:%064x", i)
		s.Images = append(s.Images, Image{
			ID: id, RepoTags: []string{fmt.Sprintf("registry.example.com/team/app-%d:v%d", i, i%7)},
			RepoDigests: []string{fmt.Sprintf("registry.example.com/team/app-%d@sha256:%064x", i, i+1<<40)},
			SizeBytes:   int64(50+i%400) << 20,
		})
		rec := ImageRecord{ID: id, FirstDetected: t0.Add(-time.Duration(i+100) * time.Minute)}
		if i%3 != 0 {
			lu := t0.Add(-time.Duration(i%5000) * time.Second)
			rec.LastUsed = &lu
		}
		s.ImageRecords = append(s.ImageRecords, rec)
	}
	s.Images[0].RepoTags = []string{"registry.k8s.io/pause:3.9"}
	for p := range nPods {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", p, p)
		sb := fmt.Sprintf("%064x", p+1<<50)
		s.Sandboxes = append(s.Sandboxes, Sandbox{ID: sb, PodUID: uid, PodName: fmt.Sprintf("pod-%d", p), PodNamespace: "ns",
			State: SandboxNotReady, CreatedAt: t0.Add(-time.Duration(p) * time.Second)})
		if p%10 == 0 {
			s.PodSource.RemovablePodUIDs = append(s.PodSource.RemovablePodUIDs, uid)
		}
		for k := range perPod {
			img := s.Images[(p*perPod+k)%(nImages/2)]
			s.Containers = append(s.Containers, Container{
				ID: fmt.Sprintf("%064x", p*perPod+k+1<<55), PodSandboxID: sb, PodUID: uid, Name: fmt.Sprintf("c%d", k%2),
				Attempt: uint32(k), ImageID: img.ID, ImageRef: img.RepoDigests[0], State: ContainerExited,
				CreatedAt: t0.Add(-time.Duration(p*perPod+k) * time.Second),
			})
		}
	}
	s.PodSource.Ready = true
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return s, data
})

func benchPolicy() Policy {
	p := DefaultPolicy()
	p.Container.MaxContainers = 30_000
	p.Image.MaxAge = 24 * time.Hour
	return p
}

// BenchmarkPlan10kImages100kContainers plans a full pass (containers,
// sandboxes, logs, images, disk reserve) over bigSnapshot. It must take
// well under BenchmarkDecodeSnapshot of the same snapshot.
//
//	go test ./engine -run '^$' -bench 'Plan|Decode' -benchmem
func BenchmarkPlan10kImages100kContainers(b *testing.B) {
	s, _ := bigSnapshot()
	p := benchPolicy()
	var plan Plan
	for b.Loop() {
		plan = PlanPass(s, p, PassFull, t0)
	}
	if len(plan.ContainerGC.Remove) == 0 || len(plan.ImageGC.Remove) == 0 || len(plan.SandboxGC.Remove) == 0 {
		b.Fatalf("the benchmark plan does no work: %d containers, %d images, %d sandboxes",
			len(plan.ContainerGC.Remove), len(plan.ImageGC.Remove), len(plan.SandboxGC.Remove))
	}
	b.ReportMetric(float64(len(s.Images)+len(s.Containers)+len(s.Sandboxes)), "objects/op")
}

// BenchmarkDecodeSnapshot decodes bigSnapshot from JSON, the way
// `nodegc plan --from FILE` reads it.
func BenchmarkDecodeSnapshot(b *testing.B) {
	_, data := bigSnapshot()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeSnapshot(data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBigSnapshotIsValidAndPlansSafely(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-container snapshot")
	}
	s, data := bigSnapshot()
	t.Run("the benchmark snapshot decodes", func(t *testing.T) {
		if _, err := DecodeSnapshot(data); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the benchmark plan keeps every safety invariant", func(t *testing.T) {
		p := benchPolicy()
		plan := PlanPass(s, p, PassFull, t0)
		if bad := checkPlanSafety(s, p, PassFull, t0, plan); len(bad) > 0 {
			t.Fatalf("%d violations, first: %s", len(bad), bad[0])
		}
	})
}

// BenchmarkExplain10k explains the plan of bigSnapshot row by row, as
// `nodegc plan` does before it prints.
func BenchmarkExplain10k(b *testing.B) {
	s, _ := bigSnapshot()
	plan := PlanPass(s, benchPolicy(), PassFull, t0)
	for b.Loop() {
		Explain(s, plan)
	}
}

// BenchmarkWritePlanJSON writes the plan of bigSnapshot and its
// explanation as `nodegc plan -o json` does.
func BenchmarkWritePlanJSON(b *testing.B) {
	s, _ := bigSnapshot()
	plan := PlanPass(s, benchPolicy(), PassFull, t0)
	x := Explain(s, plan)
	for b.Loop() {
		if err := WritePlanJSON(io.Discard, plan, x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanFromSnapshot is `nodegc plan --from FILE -o json` in one
// process, minus reading the file and starting: decode, plan, explain
// and write the JSON of bigSnapshot, side by side with its baseline,
// json.Unmarshal of the same bytes into a Snapshot (internal/bare
// decode), alternated each round. x-decode is the ratio of the medians.
func BenchmarkPlanFromSnapshot(b *testing.B) {
	_, data := bigSnapshot()
	var base, ours []time.Duration
	for b.Loop() {
		start := time.Now()
		var s Snapshot
		if err := json.Unmarshal(data, &s); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		s, err := DecodeSnapshot(data)
		if err != nil {
			b.Fatal(err)
		}
		plan := PlanPass(s, benchPolicy(), PassFull, s.TakenAt)
		if err := WriteExplainedPlanJSON(io.Discard, s, plan); err != nil {
			b.Fatal(err)
		}
		base, ours = append(base, mid.Sub(start)), append(ours, time.Since(mid))
	}
	mb, mo := medianDuration(base), medianDuration(ours)
	b.ReportMetric(float64(mb.Milliseconds()), "decode-ms")
	b.ReportMetric(float64(mo.Milliseconds()), "plan-ms")
	b.ReportMetric(float64(mo)/float64(mb), "x-decode")
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
