package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/critest"
	"github.com/nodegc/nodegc/internal/simnode"
)

// rawInFlight is how many calls the raw removal loop keeps in flight.
const rawInFlight = 8

// gcBenchNode is the node of issue 14's measurements: 2,000 images and
// pods of 6 containers each (one running, 5 dead earlier attempts).
func gcBenchNode(containers int) simnode.Options {
	return simnode.Options{Seed: 14, Images: 2000, Pods: containers / 6, DeadPerContainer: 5, InitialUsagePercent: 95}
}

// node serves a fresh simulated node for one measurement; stop ends it at
// once, so the nodes of earlier iterations do not weigh on the heap of the
// next.
func node(b *testing.B, o simnode.Options) (n *simnode.Node, ep string, stop func()) {
	b.Helper()
	n = simnode.New(o)
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		b.Fatal(err)
	}
	ep = "unix://" + filepath.Join(dir, "cri.sock")
	l, err := simnode.Listen(ep)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve(l) }()
	return n, ep, func() {
		n.Stop()
		if err := <-done; err != nil {
			b.Errorf("serve: %v", err)
		}
		os.RemoveAll(dir)
		runtime.GC() // the next measurement starts without this node's garbage
	}
}

// gcPass plans and applies one real pass of the kind through the adapter
// and the engine against a fresh node, following its events as gc does,
// with the pool of parallel (0: the default), and returns its report and
// the CPU time the process spent in the apply (the engine's and the
// in-process simulated runtime's); the pass's time is the report's start
// to finish (the apply, as gc reports it).
func gcPass(b *testing.B, o simnode.Options, kind engine.PassKind, parallel int) (engine.PassReport, time.Duration) {
	b.Helper()
	n, ep, stop := node(b, o)
	defer stop()
	c, err := Dial(context.Background(), ep, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p := engine.DefaultPolicy()
	p.Image.HighThresholdPercent, p.Image.LowThresholdPercent, p.Image.MinAge = 90, 20, 0
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simStatfs(n), Policy: p, StateDir: b.TempDir(), Parallel: parallel})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	// As gc does: follow the runtime's container events from before the
	// plan (the image re-check then lists no active containers of its own:
	// see ViewWindow), plan, then apply; the report covers the apply. The
	// plan's listing is not reused by the apply: its views list again.
	defer e.FollowEvents(context.Background(), c)()
	for deadline := time.Now().Add(10 * time.Second); !e.Following(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the simulated node's event stream did not open")
		}
	}
	_, plan, err := e.PlanAt(context.Background(), kind, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	cpu := processCPU()
	r, err := e.Apply(context.Background(), plan)
	cpu = processCPU() - cpu
	if err != nil || !r.OK() {
		b.Fatalf("pass: %v %s (%d failed)", err, r.Error, r.Count(engine.OutcomeFailed))
	}
	return r, cpu
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGCPassCPU measures what a pass costs the machine: the CPU time
// of the apply (the engine's and the simulated runtime's, which runs in the
// same process) and its wall time, for the container pass and the image
// pass at the default pool, on the nodes of BenchmarkGCPassVsRaw; medians
// over the iterations, each on a node of its own. The simulated runtime's
// removals cost next to nothing, so this is mostly the engine's own work
// per removal (re-checks, journal, events followed). Run with -benchtime
// 5x or more, two builds side by side.
func BenchmarkGCPassCPU(b *testing.B) {
	for _, kind := range []engine.PassKind{engine.PassContainers, engine.PassImages} {
		for _, n := range []int{1000, 6000, 20000} {
			b.Run(fmt.Sprintf("%s/containers=%d", kind, n), func(b *testing.B) {
				var cpus, walls []time.Duration
				for range b.N {
					r, cpu := gcPass(b, gcBenchNode(n), kind, 0)
					cpus, walls = append(cpus, cpu), append(walls, r.FinishedAt.Sub(r.StartedAt))
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(median(cpus))/float64(time.Millisecond), "cpu-ms")
				b.ReportMetric(float64(median(walls))/float64(time.Millisecond), "wall-ms")
			})
		}
	}
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

// listTime returns how long the listing a pass of the kind makes at
// apply time takes through the adapter on the node at ep, before its
// first removal can be re-checked (the executor's view; see
// engine.ViewWindow): every container and the images at once for an image
// pass, the running containers for a container pass. It is the floor of
// the pass's time beside the raw loop's.
func listTime(b *testing.B, ep string, kind engine.PassKind) time.Duration {
	b.Helper()
	c, err := Dial(context.Background(), ep, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	start := time.Now()
	if kind == engine.PassImages {
		var wg sync.WaitGroup
		var ierr error
		wg.Go(func() { _, ierr = c.ListImages(ctx) })
		_, err = c.ListContainers(ctx)
		wg.Wait()
		err = cmpOr(err, ierr)
	} else {
		_, err = c.ListRunningContainers(ctx)
	}
	d := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// median returns the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkGCPassVsRaw measures issue 14's simulated-node figures, side by
// side in one run: the image pass and the container pass (from the pass
// report's start to its finish) against the raw removal of the same IDs
// with 8 generated CRI calls in flight on a fresh node of the same seed, at
// 1,000, 6,000 and 20,000 containers, with the default pool
// (engine.DefaultParallel) and with 8 (the raw loop's; once, where they
// are the same). Beside each raw loop, on its fresh node, it times
// the listing the pass makes at apply time before its first re-check
// (listTime): a floor under the pass's time. Each iteration measures each
// on a node of its own; the metrics are the medians over the iterations
// (seconds) and the ratios of the medians to the raw loop's: the pass's
// (x-raw) and its listing's (list-x-raw). Run with -benchtime 5x or more.
func BenchmarkGCPassVsRaw(b *testing.B) {
	for _, n := range []int{1000, 6000, 20000} {
		for _, parallel := range slices.Compact([]int{engine.DefaultParallel, rawInFlight}) {
			b.Run(fmt.Sprintf("containers=%d/parallel=%d", n, parallel), func(b *testing.B) {
				o := gcBenchNode(n)
				var imgPass, imgRaw, imgList, ctrPass, ctrRaw, ctrList []time.Duration
				var imgs, ctrs int
				for range b.N {
					r, _ := gcPass(b, o, engine.PassImages, parallel)
					ids := removedIDs(r, engine.ItemImage)
					imgPass = append(imgPass, r.FinishedAt.Sub(r.StartedAt))
					_, ep, stop := node(b, o)
					imgList = append(imgList, listTime(b, ep, engine.PassImages))
					runtime.GC() // the listing's garbage does not weigh on the raw loop
					imgRaw = append(imgRaw, critest.RawRemove(b, ep, ids, rawInFlight, critest.RemoveImage))
					stop()
					imgs = len(ids)

					r, _ = gcPass(b, o, engine.PassContainers, parallel)
					ids = removedIDs(r, engine.ItemContainer)
					ctrPass = append(ctrPass, r.FinishedAt.Sub(r.StartedAt))
					_, ep, stop = node(b, o)
					ctrList = append(ctrList, listTime(b, ep, engine.PassContainers))
					runtime.GC()
					ctrRaw = append(ctrRaw, critest.RawRemove(b, ep, ids, rawInFlight, func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, _ runtimeapi.ImageServiceClient, id string) error {
						_, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
						return err
					}))
					stop()
					ctrs = len(ids)
				}
				ip, ir, cp, cr := median(imgPass), median(imgRaw), median(ctrPass), median(ctrRaw)
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(imgs), "images")
				b.ReportMetric(ip.Seconds(), "image-pass-s")
				b.ReportMetric(ir.Seconds(), "image-raw-s")
				b.ReportMetric(ip.Seconds()/ir.Seconds(), "image-x-raw")
				b.ReportMetric(median(imgList).Seconds()/ir.Seconds(), "image-list-x-raw")
				b.ReportMetric(float64(ctrs), "containers-removed")
				b.ReportMetric(cp.Seconds(), "ctr-pass-s")
				b.ReportMetric(cr.Seconds(), "ctr-raw-s")
				b.ReportMetric(cp.Seconds()/cr.Seconds(), "ctr-x-raw")
				b.ReportMetric(median(ctrList).Seconds()/cr.Seconds(), "ctr-list-x-raw")
				b.Logf("%d containers, pool of %d, medians of %d: image pass %v for %d images (raw %v, its apply-time listing %v), container pass %v for %d containers (raw %v, its apply-time listing %v)",
					n, parallel, b.N, ip, imgs, ir, median(imgList), cp, ctrs, cr, median(ctrList))
			})
		}
	}
}

// floorJournal models the least a pass's journal must write for a
// removal: its started line handed to the kernel (one write(2)) before
// the call, and its outcome line after, queued to go out with the next
// write, each line encoded as the journal encodes it (engine.JournalEntry
// as JSON).
type floorJournal struct {
	mu      sync.Mutex
	f       *os.File
	pending []byte
	err     error // the first failed encoding or write
}

// line queues an entry; out hands everything queued to the kernel. It
// runs on the raw loop's workers: a failure is kept for close.
func (j *floorJournal) line(en engine.JournalEntry, out bool) {
	enc, err := json.Marshal(en)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.err = cmpOr(j.err, err)
	j.pending = append(append(j.pending, enc...), '\n')
	if out {
		j.flushLocked()
	}
}

// flushLocked writes the queued lines; j.mu is held.
func (j *floorJournal) flushLocked() {
	if _, err := j.f.Write(j.pending); err != nil {
		j.err = cmpOr(j.err, err)
	}
	j.pending = j.pending[:0]
}

// close writes the lines still queued and returns the first failure.
func (j *floorJournal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.flushLocked()
	return j.err
}

// BenchmarkGCPassFloor measures the floor under the container pass's
// ratio to the raw loop (BenchmarkGCPassVsRaw), on its simulated nodes
// and with the same IDs: the raw removals alone, then with what every
// deleting pass must add to each removal, one step at a time. "events"
// follows the runtime's container event stream, as gc and the agent do
// (the engine relies on it to trust its view of the node; see
// engine.ViewWindow), so the runtime sends, and the process reads, an
// event for each container removed. "events+journal" also writes each
// removal's journal lines (floorJournal). No re-check, view or pool is
// added: what these cost is the least a pass can cost beside raw. The
// metrics are the medians' ratios to the raw loop's; the variants take
// turns within each iteration, each on a fresh node. Run with -benchtime
// 3x or more.
func BenchmarkGCPassFloor(b *testing.B) {
	variants := []string{"raw", "events", "events+journal"}
	for _, n := range []int{1000, 6000, 20000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			o := gcBenchNode(n)
			r, _ := gcPass(b, o, engine.PassContainers, 0)
			ids := removedIDs(r, engine.ItemContainer)
			took := map[string][]time.Duration{}
			for range b.N {
				for _, v := range variants {
					took[v] = append(took[v], floorRun(b, o, ids, v != "raw", v == "events+journal"))
				}
			}
			raw := median(took["raw"])
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(raw.Seconds(), "raw-s")
			for _, v := range variants[1:] {
				b.ReportMetric(median(took[v]).Seconds()/raw.Seconds(), v+"-x-raw")
			}
			b.Logf("%d containers, %d removed, medians of %d: raw %v, with events %v, with events and journal %v",
				n, len(ids), b.N, raw, median(took["events"]), median(took["events+journal"]))
		})
	}
}

// floorRun removes ids from a fresh node of o with the raw loop, following
// the node's container event stream when events is set and writing each
// removal's journal lines (floorJournal) when journal is; it returns the
// raw loop's time.
func floorRun(b *testing.B, o simnode.Options, ids []string, events, journal bool) time.Duration {
	b.Helper()
	_, ep, stop := node(b, o)
	defer stop()
	c, err := Dial(context.Background(), ep, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var read sync.WaitGroup
	defer read.Wait()
	defer cancel()
	if events {
		ch, err := c.ContainerEvents(ctx)
		if err != nil {
			b.Fatal(err)
		}
		read.Go(func() {
			for range ch {
			}
		})
	}
	var j *floorJournal
	if journal {
		f, err := os.Create(filepath.Join(b.TempDir(), "journal"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		j = &floorJournal{f: f}
	}
	d := critest.RawRemove(b, ep, ids, rawInFlight, func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, _ runtimeapi.ImageServiceClient, id string) error {
		en := engine.JournalEntry{Kind: engine.ItemContainer, ID: id, Pass: "floor", PassKind: engine.PassContainers}
		if j != nil {
			en.Op, en.Time = engine.JournalStarted, time.Now()
			j.line(en, true)
		}
		_, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
		if j != nil {
			en.Op, en.Time = engine.JournalRemoved, time.Now()
			j.line(en, false)
		}
		return err
	})
	if j != nil {
		if err := j.close(); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// cmpOr is a if it is an error, else b.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
