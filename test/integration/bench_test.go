package integration

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// benchImages is how many images each measured removal removes.
const benchImages = 50

// benchSeq makes every imported batch's prefix unique on a node.
var benchSeq atomic.Int64

// benchSetup imports benchImages images of the smallest size (the test
// binary, about 2.4 MiB each, twice that on disk) and makes them old enough
// for the default MinAge in a fresh state dir. The timer is stopped.
func benchSetup(b *testing.B, n *realnode.Node, c engine.Runtime) ([]realnode.ImageRef, string) {
	b.Helper()
	imgs := n.Must(b).ImportImages(benchImages, 0, fmt.Sprintf("bench%d", benchSeq.Add(1)))
	state := b.TempDir()
	detectAt(b, n, c, state, time.Now().Add(-time.Hour))
	return imgs, state
}

// benchCheckGone fails the benchmark unless CRI lists none of imgs (and the
// sandbox image is still there).
func benchCheckGone(b *testing.B, n *realnode.Node, imgs []realnode.ImageRef) {
	b.Helper()
	if !realnode.Eventually(15*time.Second, func() bool {
		st := n.Must(b).State()
		return len(st.Images) == 1 && st.Images[0] == n.SandboxImage().ID
	}) {
		b.Fatalf("images left after removing %d: %v", len(imgs), n.Must(b).State().Images)
	}
}

// reportRate reports removed images per second of measured time.
func reportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(benchImages*b.N)/s, "images/s")
	}
	b.ReportMetric(0, "ns/op") // the time per pass is s/pass, clearer for a 50-image pass
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/pass")
}

// BenchmarkRealGC50Images measures one real image GC pass removing 50
// images on a real containerd: through the engine and CRI adapter in
// process, and through the nodegc binary (process start, connect, snapshot,
// plan, apply, report). Only the pass is timed; importing the images is not.
func BenchmarkRealGC50Images(b *testing.B) { forEachRuntimeB(b, benchmarkRealGC50Images) }

func benchmarkRealGC50Images(b *testing.B, rt realnode.Runtime) {
	n := startNode(b, rt, 512*MiB)
	c := dial(b, n)
	policy := imagePolicy(1, 0, engine.DefaultImageMinimumGCAge) // a space pass that frees everything eligible

	b.Run("engine", func(b *testing.B) {
		b.StopTimer()
		for range b.N {
			imgs, state := benchSetup(b, n, c)
			e := newEngine(b, n, engineOptions{Runtime: c, Policy: policy, StateDir: state})
			b.StartTimer()
			r, err := e.Run(context.Background(), engine.PassImages)
			b.StopTimer()
			if err != nil || r.Count(engine.OutcomeRemoved) != benchImages || !r.OK() {
				b.Fatalf("pass: %v; removed %d of %d, items %+v", err, r.Count(engine.OutcomeRemoved), benchImages, r.Items)
			}
			benchCheckGone(b, n, imgs)
		}
		reportRate(b)
	})

	b.Run("binary", func(b *testing.B) {
		b.StopTimer()
		nodegc(b) // build outside the timer
		for range b.N {
			imgs, state := benchSetup(b, n, c)
			args := append([]string{"gc", "--images", "--yes", "-o", "json", "--image-gc-high-threshold", "1", "--image-gc-low-threshold", "0"}, cliFlags(b, n, state)...)
			b.StartTimer()
			res := runCLI(b, args...)
			b.StopTimer()
			var r engine.PassReport
			decodeJSON(b, res, &r)
			if res.Code != 0 || r.Count(engine.OutcomeRemoved) != benchImages {
				b.Fatalf("exit %d, removed %d of %d; stderr:\n%s", res.Code, r.Count(engine.OutcomeRemoved), benchImages, res.Stderr)
			}
			benchCheckGone(b, n, imgs)
		}
		reportRate(b)
	})
}

// BenchmarkCtrRm50Images measures the same 50 removals done as an operator's
// loop would: one `ctr -n k8s.io images rm --sync <ref> <id>` process per
// image (both names, or containerd keeps the image under CRI's ID name;
// --sync waits until the content and snapshot are deleted, as CRI
// RemoveImage does).
func BenchmarkCtrRm50Images(b *testing.B) { forEachRuntimeB(b, benchmarkCtrRm50Images) }

func benchmarkCtrRm50Images(b *testing.B, rt realnode.Runtime) {
	n := startNode(b, rt, 512*MiB)
	c := dial(b, n)
	b.StopTimer()
	for range b.N {
		imgs, _ := benchSetup(b, n, c)
		b.StartTimer()
		for _, img := range imgs {
			if out, err := n.Ctr("images", "rm", "--sync", img.Ref, img.ID); err != nil {
				b.Fatalf("ctr images rm %s: %v: %s", img.Ref, err, strings.TrimSpace(string(out)))
			}
		}
		b.StopTimer()
		benchCheckGone(b, n, imgs)
	}
	reportRate(b)
}
