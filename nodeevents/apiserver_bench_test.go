package nodeevents

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/internal/kubetest"
)

// counting counts the writes that reach the API server.
type counting struct {
	Creator
	creates, patches, failed atomic.Int64
}

func (c *counting) CreateEvent(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := c.Creator.CreateEvent(ctx, ev)
	c.count(&c.creates, err)
	return out, err
}

func (c *counting) PatchEvent(ctx context.Context, ns, name string, patch []byte) (*eventsv1.Event, error) {
	out, err := c.Creator.PatchEvent(ctx, ns, name, patch)
	c.count(&c.patches, err)
	return out, err
}

func (c *counting) count(n *atomic.Int64, err error) {
	if err != nil {
		c.failed.Add(1)
		return
	}
	n.Add(1)
}

// BenchmarkEventsAt2000Nodes measures the event writes a fleet's agents
// make on a real kube-apiserver (etcd and the cached v1.36.3 binary)
// over an hour of simulated time: each node reports a container pass that
// removed something every minute and an image pass that removed images
// but met FreeDiskSpaceFailed every 5 minutes (the worst case:
// one event per pass). The clock is simulated, so the hour takes as long
// as its writes do; the old figure is one create per event Of returns,
// what the recorder sent before it counted repeats on series.
// NODEGC_EVENTS_NODES sets the nodes (default 2000). Run with
//
//	flock /tmp/nodegc-real.lock go test ./nodeevents -run '^$' -bench EventsAt2000Nodes -benchtime 1x
func BenchmarkEventsAt2000Nodes(b *testing.B) {
	nodes := 2000
	if v, err := strconv.Atoi(os.Getenv("NODEGC_EVENTS_NODES")); err == nil && v > 0 {
		nodes = v
	}
	const minutes = 60
	api := kubetest.StartAPIServer(b, kubetest.APIServerOptions{})
	cfg, err := clientcmd.BuildConfigFromFlags("", api.Admin)
	if err != nil {
		b.Fatal(err)
	}
	// One client stands for every node's: each node's own has client-go's
	// default 5 requests a second, far above what it sends here.
	cfg.QPS, cfg.Burst = 1e6, 1e6
	kc, err := kubeclient.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sink := &counting{Creator: kc}
		var clock atomic.Int64
		now := func() time.Time { return time.Unix(0, clock.Load()) }
		recs := make([]*Recorder, nodes)
		for i := range recs {
			recs[i] = newRecorder(Options{Client: sink, NodeName: fmt.Sprintf("sim-%04d", i), Now: now, Log: slog.New(slog.DiscardHandler)})
		}
		t0 := time.Now().Truncate(time.Minute)
		old, perMinute := 0, make([]int64, minutes)
		start := time.Now()
		for m := range minutes {
			before := sink.creates.Load() + sink.patches.Load()
			clock.Store(t0.Add(time.Duration(m) * time.Minute).UnixNano())
			var evs []Event
			evs = append(evs, Of(containerPass(m))...)
			if m%5 == 0 {
				evs = append(evs, Of(imagePass(m))...)
			}
			old += len(evs) * nodes
			parallel(recs, func(r *Recorder) {
				for _, ev := range evs {
					r.handle(ev)
				}
			})
			clock.Store(t0.Add(time.Duration(m)*time.Minute + 30*time.Second).UnixNano())
			parallel(recs, func(r *Recorder) { r.sendAll(r.series.tick(r.o.Now())) })
			perMinute[m] = sink.creates.Load() + sink.patches.Load() - before
		}
		took := time.Since(start)
		if f := sink.failed.Load(); f > 0 {
			b.Fatalf("%d writes failed", f)
		}
		writes := sink.creates.Load() + sink.patches.Load()
		var peak int64
		for _, n := range perMinute {
			peak = max(peak, n)
		}
		var after int64 // from minute 1 on: past the first events of every series
		for _, n := range perMinute[1:] {
			after += n
		}
		b.ReportMetric(float64(writes)/minutes, "writes/min")
		b.ReportMetric(float64(after)/(minutes-1), "writes/min-after-first")
		b.ReportMetric(float64(peak), "peak-writes/min")
		b.ReportMetric(float64(old)/minutes, "old-creates/min")
		b.Logf("%d nodes, %d simulated minutes: %d creates + %d patches (%.0f a minute; %.0f a minute after the first; peak %d in a minute) where one create per event made %d (%.0f a minute): %.1fx fewer; the API server took them in %s",
			nodes, minutes, sink.creates.Load(), sink.patches.Load(), float64(writes)/minutes, float64(after)/(minutes-1), peak, old, float64(old)/minutes, float64(old)/float64(writes), took.Round(time.Second))
	}
}

// parallel runs f on every recorder, 32 at a time.
func parallel(recs []*Recorder, f func(*Recorder)) {
	var wg sync.WaitGroup
	ch := make(chan *Recorder)
	for range 32 {
		wg.Go(func() {
			for r := range ch {
				f(r)
			}
		})
	}
	for _, r := range recs {
		ch <- r
	}
	close(ch)
	wg.Wait()
}

// containerPass removed two dead containers and a log file.
func containerPass(m int) engine.PassReport {
	return engine.PassReport{Run: "sim", ID: int64(m*2 + 1), Kind: engine.PassContainers,
		Items: append(items(engine.ItemContainer, engine.OutcomeRemoved, 2), items(engine.ItemLog, engine.OutcomeRemoved, 1)...)}
}

// imagePass removed three images and still failed to free enough.
func imagePass(m int) engine.PassReport {
	return engine.PassReport{Run: "sim", ID: int64(m*2 + 2), Kind: engine.PassImages,
		Items: items(engine.ItemImage, engine.OutcomeRemoved, 3), EstimatedBytesFreed: 3 << 30,
		Events: []engine.Event{{Reason: engine.EventFreeDiskSpaceFailed, Message: "Insufficient free disk space", Warning: true}}}
}
