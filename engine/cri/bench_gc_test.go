package cri

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

// rawInFlight is how many calls the raw removal loop keeps in flight.
const rawInFlight = 8

// gcBenchNode is the node of issue 14's measurements: 2,000 images and
// pods of 6 containers each (one running, 5 dead earlier attempts).
func gcBenchNode(containers int) simnode.Options {
	return simnode.Options{Seed: 14, Images: 2000, Pods: containers / 6, DeadPerContainer: 5, InitialUsagePercent: 95}
}

// rawRemove removes ids with rawInFlight generated CRI calls in flight and
// returns how long it took; it fails b on any error.
func rawRemove(b *testing.B, ep string, ids []string, call func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, im runtimeapi.ImageServiceClient, id string) error) time.Duration {
	b.Helper()
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	rt, im := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctx := context.Background()
	if _, err := rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil { // connect outside the timer
		b.Fatal(err)
	}
	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for range rawInFlight {
		wg.Go(func() {
			for id := range work {
				if err := call(ctx, rt, im, id); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	d := time.Since(start)
	if first != nil {
		b.Fatal(first)
	}
	return d
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// gcPass plans and applies one real pass of the kind through the adapter
// and the engine against a fresh node and returns its report; the pass's
// time is the report's start to finish (the apply, as gc reports it).
func gcPass(b *testing.B, o simnode.Options, kind engine.PassKind) engine.PassReport {
	b.Helper()
	n, ep := serve(b, o)
	c := dial(b, ep, Options{})
	p := engine.DefaultPolicy()
	p.Image.HighThresholdPercent, p.Image.LowThresholdPercent, p.Image.MinAge = 90, 20, 0
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simStatfs(n), Policy: p, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	// As gc does: plan, then apply; the report covers the apply.
	_, plan, err := e.PlanAt(context.Background(), kind, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	r, err := e.Apply(context.Background(), plan)
	if err != nil || !r.OK() {
		b.Fatalf("pass: %v %s (%d failed)", err, r.Error, r.Count(engine.OutcomeFailed))
	}
	return r
}

// removedIDs lists the IDs of the report's removed items of the kind.
func removedIDs(r engine.PassReport, kind engine.ItemKind) []string {
	var out []string
	for _, it := range r.Items {
		if it.Kind == kind && it.Outcome == engine.OutcomeRemoved {
			out = append(out, it.ID)
		}
	}
	return out
}

// BenchmarkGCPassVsRaw measures issue 14's simulated-node figures, side by
// side in one run: the image pass and the container pass (from the pass
// report's start to its finish) against the raw removal of the same IDs
// with 8 generated CRI calls in flight on a fresh node of the same seed, at
// 1,000, 6,000 and 20,000 containers. Metrics: seconds of each and the
// ratio pass/raw (x-raw). Run with -benchtime 1x.
func BenchmarkGCPassVsRaw(b *testing.B) {
	for _, n := range []int{1000, 6000, 20000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			o := gcBenchNode(n)
			var imgPass, imgRaw, ctrPass, ctrRaw time.Duration
			var imgs, ctrs int
			for range b.N {
				r := gcPass(b, o, engine.PassImages)
				ids := removedIDs(r, engine.ItemImage)
				imgPass += r.FinishedAt.Sub(r.StartedAt)
				_, ep := serve(b, o)
				imgRaw += rawRemove(b, ep, ids, func(ctx context.Context, _ runtimeapi.RuntimeServiceClient, im runtimeapi.ImageServiceClient, id string) error {
					_, err := im.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}})
					return err
				})
				imgs = len(ids)

				r = gcPass(b, o, engine.PassContainers)
				ids = removedIDs(r, engine.ItemContainer)
				ctrPass += r.FinishedAt.Sub(r.StartedAt)
				_, ep = serve(b, o)
				ctrRaw += rawRemove(b, ep, ids, func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, _ runtimeapi.ImageServiceClient, id string) error {
					_, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
					return err
				})
				ctrs = len(ids)
			}
			k := float64(b.N)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(imgs), "images")
			b.ReportMetric(imgPass.Seconds()/k, "image-pass-s")
			b.ReportMetric(imgRaw.Seconds()/k, "image-raw-s")
			b.ReportMetric(imgPass.Seconds()/imgRaw.Seconds(), "image-x-raw")
			b.ReportMetric(float64(ctrs), "containers-removed")
			b.ReportMetric(ctrPass.Seconds()/k, "ctr-pass-s")
			b.ReportMetric(ctrRaw.Seconds()/k, "ctr-raw-s")
			b.ReportMetric(ctrPass.Seconds()/ctrRaw.Seconds(), "ctr-x-raw")
			if strings.Contains(b.Name(), "6000") {
				b.Logf("6,000 containers: image pass %v for %d images (raw %v), container pass %v for %d containers (raw %v)", imgPass/time.Duration(b.N), imgs, imgRaw/time.Duration(b.N), ctrPass/time.Duration(b.N), ctrs, ctrRaw/time.Duration(b.N))
			}
		})
	}
}
