package integration

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// gcBenchImages is how many unused images issue 14's real-runtime
// measurement removes.
const gcBenchImages = 200

// rawRemoveImages removes the images with inFlight raw CRI RemoveImage
// calls in flight, as fast as the runtime allows, and returns the time it
// took.
func rawRemoveImages(b *testing.B, n *realnode.Node, ids []string, inFlight int) time.Duration {
	b.Helper()
	conn, err := grpc.NewClient(n.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	im := runtimeapi.NewImageServiceClient(conn)
	ctx := context.Background()
	if _, err := im.ListImages(ctx, &runtimeapi.ListImagesRequest{}); err != nil { // connect outside the timer
		b.Fatal(err)
	}
	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for id := range work {
				if _, err := im.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}}); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
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

// timeGC runs `<bin> gc --reclaim-all --yes` as a whole process over the
// images and returns its wall time.
func timeGC(b *testing.B, n *realnode.Node, c engine.Runtime, bin string, imgs []realnode.ImageRef, state string, extra ...string) time.Duration {
	b.Helper()
	args := append(append([]string{"gc", "--reclaim-all", "--yes", "-o", "json"}, cliFlags(b, n, state)...), extra...)
	start := time.Now()
	res := runCLIBin(b, bin, args...)
	d := time.Since(start)
	var r engine.PassReport
	decodeJSON(b, res, &r)
	if res.Code != 0 || r.Count(engine.OutcomeRemoved) != len(imgs) {
		b.Fatalf("%s: exit %d, removed %d of %d; stderr:\n%s", bin, res.Code, r.Count(engine.OutcomeRemoved), len(imgs), res.Stderr)
	}
	benchCheckGone(b, n, imgs)
	return d
}

// BenchmarkGCProcessVs8RawRemoveImage is issue 14's real-runtime figure,
// side by side in one run: the whole `nodegc gc --reclaim-all --yes`
// process removing 200 unused images from a real containerd, at its
// default --parallel 4 and at --parallel 8, against raw CRI RemoveImage
// calls removing 200 images imported the same way, 8 in flight (the
// issue's yardstick) and 4 (the default pool's). With NODEGC_BENCH_OLD_BIN
// set to another nodegc binary (an older build), it times that one too.
// Metrics: seconds of each and the speed of nodegc relative to a raw loop
// (raw-s / gc-s; the goal is at least 0.8 of raw8). Run as root with
// -benchtime 1x or more.
func BenchmarkGCProcessVs8RawRemoveImage(b *testing.B) {
	n := startNode(b, realnode.Containerd16, 2048*MiB)
	c := dial(b, n)
	bin := nodegc(b)
	old := os.Getenv("NODEGC_BENCH_OLD_BIN")
	var gcT, gc8T, rawT, raw4T, oldT time.Duration
	for i := range b.N {
		setup := func(what string) ([]realnode.ImageRef, string) {
			imgs := n.Must(b).ImportImages(gcBenchImages, 0, fmt.Sprintf("gc%s%d-%d", what, i, benchSeq.Add(1)))
			state := b.TempDir()
			detectAt(b, n, c, state, time.Now().Add(-time.Hour))
			return imgs, state
		}
		imgs, state := setup("new")
		gcT += timeGC(b, n, c, bin, imgs, state)
		imgs, state = setup("p8")
		gc8T += timeGC(b, n, c, bin, imgs, state, "--parallel", "8")
		imgs, _ = setup("raw")
		rawT += rawRemoveImages(b, n, ids(imgs), 8)
		benchCheckGone(b, n, imgs)
		imgs, _ = setup("raw4")
		raw4T += rawRemoveImages(b, n, ids(imgs), 4)
		benchCheckGone(b, n, imgs)
		if old != "" {
			imgs, state = setup("old")
			oldT += timeGC(b, n, c, old, imgs, state)
		}
	}
	k := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(gcT.Seconds()/k, "gc-s")
	b.ReportMetric(rawT.Seconds()/k, "raw8-s")
	b.ReportMetric(raw4T.Seconds()/k, "raw4-s")
	b.ReportMetric(rawT.Seconds()/gcT.Seconds(), "gc-speed-of-raw")
	b.ReportMetric(raw4T.Seconds()/gcT.Seconds(), "gc-speed-of-raw4")
	b.ReportMetric(gc8T.Seconds()/k, "gc-p8-s")
	b.ReportMetric(rawT.Seconds()/gc8T.Seconds(), "gc-p8-speed-of-raw")
	if old != "" {
		b.ReportMetric(oldT.Seconds()/k, "old-gc-s")
		b.ReportMetric(rawT.Seconds()/oldT.Seconds(), "old-gc-speed-of-raw")
	}
}
