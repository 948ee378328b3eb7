package forecast_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// scenario is a simulated node's workload for a while.
type scenario struct {
	name     string
	node     simnode.Options
	duration time.Duration
	// levelOff, when set, is when the workload stops: the node levels off.
	levelOff time.Duration
}

// withDuration returns the scenario run for d.
func (sc scenario) withDuration(d time.Duration) scenario {
	sc.duration = d
	return sc
}

// simRun is what a scenario made: a reading a minute, as the agent
// takes them, and at each whether each line was crossed then.
type simRun struct {
	readings []forecast.Reading
	// gcCrossed: usage reached the high threshold (engine.UsagePercent,
	// the kubelet's rounding). evCrossed: available plus what a
	// reclaim-all would free is below imagefs.available's threshold.
	gcCrossed, evCrossed []bool
	lines                forecast.Options
}

// simulate runs the scenario on a simulated node served over CRI, with
// the engine removing as the kubelet's period say: a workload step every
// 10 s, a container pass every minute and an image pass every 5 minutes
// (engine.ContainerGCPeriod, ImageGCPeriod), and a reading every minute
// before the passes, whose Freed is what the previous minute's passes
// freed.
func simulate(t testing.TB, sc scenario) simRun {
	t.Helper()
	start := simnode.DefaultStart
	var clock atomic.Int64
	clock.Store(start.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	o := sc.node
	o.Start, o.Now = start, now
	n, ep := simnode.ServeTemp(t, o)
	ctx := context.Background()
	c, err := cri.Dial(ctx, ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	policy := engine.DefaultPolicy()
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simfs.Local(n), Policy: policy, Now: now,
		PodSource: func(context.Context, engine.Snapshot) (engine.PodSource, error) {
			return engine.PodSource{Ready: true, RemovablePodUIDs: n.RemovablePods()}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var run simRun
	var freed int64
	pass := func(kind engine.PassKind) {
		r, err := e.Run(ctx, kind)
		if err != nil {
			t.Fatal(err)
		}
		freed += forecast.FreedBy(r)
	}
	for at := time.Duration(0); at <= sc.duration; at += 10 * time.Second {
		clock.Store(start.Add(at).UnixNano())
		if sc.levelOff == 0 || at < sc.levelOff {
			n.Step(now())
		}
		if at%time.Minute != 0 {
			continue
		}
		s, err := e.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, plan := forecast.ReadingOf(s, policy)
		r.Freed, freed = freed, 0
		run.lines = forecast.OptionsFor(policy, plan.DiskReserve, 0)
		usage, _ := engine.UsagePercent(s.ImageFs)
		run.readings = append(run.readings, r)
		run.gcCrossed = append(run.gcCrossed, usage >= policy.Image.HighThresholdPercent)
		run.evCrossed = append(run.evCrossed, r.Available+r.Reclaimable < run.lines.EvictionBytes)
		pass(engine.PassContainers)
		if at%engine.ImageGCPeriod == 0 {
			pass(engine.PassImages)
		}
	}
	return run
}

// baseNode is the simulated node of the scenarios: 20 GiB, 30 images,
// 10 pods churning, pulls of 100-300 MiB (pull is the chance of one per
// 10 s step).
func baseNode(seed int64, pull float64) simnode.Options {
	return simnode.Options{
		Seed: seed, Images: 30, Pods: 10, MinImageBytes: 50 * mib, MaxImageBytes: 400 * mib,
		CapacityBytes: 20 * gib, BaseUsageBytes: 8 * gib,
		Workload: simnode.Workload{
			PullProbability: pull, PullMinBytes: 100 * mib, PullMaxBytes: 300 * mib,
			DieProbability: 0.001, PodStartProbability: 0.01, PodDeleteProbability: 0.01,
		},
	}
}

// TestLiveForecastTenMinutesAhead is the live check: a simulated node
// filling at a steady rate (8 MiB every 10 s that GC cannot remove,
// pods starting, dying and deleted, no pulls), forecast from readings
// taken as the agent takes them; the forecast made 10
// minutes (simulated) before usage reached the high threshold is within
// 20% of when it did.
func TestLiveForecastTenMinutesAhead(t *testing.T) {
	o := baseNode(1, 0)
	o.Workload.GrowthBytes = 8 * mib
	run := simulate(t, scenario{node: o, duration: 3 * time.Hour})
	cross := -1
	for i, c := range run.gcCrossed {
		if c {
			cross = i
			break
		}
	}
	if cross < 30 {
		t.Fatalf("threshold crossed at reading %d; the scenario needs at least 30 minutes of history before it", cross)
	}
	ahead := cross - 10 // readings are a minute apart
	f := forecast.PredictLine(run.readings[:ahead+1], forecast.LineGCThreshold, run.lines)
	actual := run.readings[cross].At.Sub(run.readings[ahead].At).Seconds()
	if f.Status != forecast.StatusFilling || f.Estimate < 0.8*actual || f.Estimate > 1.2*actual {
		t.Fatalf("forecast 10 min ahead: %s in %.0f s, threshold crossed in %.0f s (want within 20%%)", f.Status, f.Estimate, actual)
	}
	t.Logf("forecast %.0f s [%.0f, %.0f], crossed in %.0f s", f.Estimate, f.Lower, f.Upper, actual)
}
