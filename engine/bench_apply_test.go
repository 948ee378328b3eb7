package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkApplyOverhead measures the executor's own cost per removed
// image (re-check against the node view, journal, pool), against the
// in-memory fake runtime whose calls cost next to nothing: issue 14's image
// pass of 1,358 removals on a node of 2,000 images and 6,000 containers.
// Metric: microseconds per removed image.
func BenchmarkApplyOverhead(b *testing.B) {
	const images, removed, containers = 2000, 1358, 6000
	var total time.Duration
	for range b.N {
		b.StopTimer()
		rt := newFakeRuntime()
		var rm []ImageRemoval
		for i := range images {
			id := fmt.Sprintf("sha256:%064d", i)
			img := Image{ID: id, SizeBytes: 1000, RepoTags: []string{fmt.Sprintf("registry.example/app-%d:v1", i)},
				RepoDigests: []string{fmt.Sprintf("registry.example/app-%d@sha256:%064d", i, i)}}
			rt.Images[id] = img
			if i < removed {
				rm = append(rm, ImageRemoval{ID: id, SizeBytes: img.SizeBytes, Reason: RemoveForSpace, RepoTags: img.RepoTags})
			}
		}
		for i := range containers {
			id := fmt.Sprintf("c%06d", i)
			img := fmt.Sprintf("sha256:%064d", removed+i%(images-removed))
			rt.Containers[id] = Container{ID: id, ImageID: img, ImageRef: img, PodSandboxID: fmt.Sprintf("s%d", i/6), PodUID: fmt.Sprintf("u%d", i/6), State: ContainerExited}
		}
		e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		r, err := e.Apply(context.Background(), Plan{EvaluatedAt: start, Pass: PassImages, ImageGC: ImagePlan{Remove: rm}})
		took := time.Since(start)
		b.StopTimer()
		if err != nil || r.Count(OutcomeRemoved) != removed {
			b.Fatalf("pass: %v, %d removed (%s)", err, r.Count(OutcomeRemoved), r.Error)
		}
		total += took
		e.Close()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N*removed), "us/image")
}
