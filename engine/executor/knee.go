package executor

import (
	"context"
	"slices"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// The adaptive pool (`--parallel auto`, opt-in; the default is a pool of
// DefaultParallel) finds the runtime's knee instead of keeping a fixed
// number of removals in flight. Runtimes differ: containerd's
// RemoveImage waits for a metadata GC that serves every removal in flight
// at once, so its throughput was still rising at 32 in flight, while
// another runtime may gain nothing past a few. And every removal slows the
// runtime's other calls, the kubelet's among them. So each phase of a
// pass starts at one removal in flight, the kubelet's pace, and measures
// what that costs the calls the kubelet's PLEG makes on every relist
// (ListPodSandbox, then ListContainers): that is the latency a serial
// pass causes. Then, one epoch at a time, it doubles the removals in
// flight while the removals per second rise, holds where they stop
// rising, and halves them when the PLEG calls take longer than at one in
// flight. `--parallel N` pins the pool instead.
const (
	// MaxParallel is the widest pool: the adaptive pool's ceiling, and
	// the largest Options.Parallel the command line accepts. Without a
	// bound a typo is a denial of service (--parallel 100000000 ran out
	// of memory after planning, issue 20); containerd's removals were
	// still faster at 32 in flight than at 16 (issue 22).
	MaxParallel = 64
	// kneeProbeEvery is how often the pool makes the PLEG's calls while
	// a phase runs; a listing that takes long (a large node) is made at
	// most a tenth of the time: every kneeProbeCost times its duration.
	kneeProbeEvery = 25 * time.Millisecond
	kneeProbeCost  = 10
	// kneeMinEpoch is the shortest epoch; an epoch also waits for as
	// many removals to end as it keeps in flight, so that every slot
	// has cycled once.
	kneeMinEpoch = 5 * time.Millisecond
	// kneeSerialSamples is how many probes at one in flight measure the
	// serial pace (their mean) before the pool first grows.
	kneeSerialSamples = 2
	// kneeSamples is how many of the last probes at a width above one
	// the pool looks at: it backs off when their median is slower than
	// the serial pace allows, so one slow listing on a busy machine is
	// noise, two of three are not.
	kneeSamples = 3
	// kneeGain is how much more throughput a wider pool must bring to
	// grow again: doubling the removals in flight for less than a tenth
	// more is noise, or the knee; and how much less it must bring for
	// the pool to go back to the width before.
	kneeGain = 1.10
	// kneeSlack and kneeSlackMin are how far above the serial pace the
	// PLEG calls may go before the pool backs off: half of it, at least
	// 2 ms (a busy machine moves them that much on its own).
	kneeSlack    = 0.5
	kneeSlackMin = 2 * time.Millisecond
	// kneeRetry is how many epochs the pool holds before it tries the
	// next width again (the machine's load changes over a long pass).
	kneeRetry = 4
)

// kneeDecision is what the controller did: at the end of an epoch, or
// on a probe.
type kneeDecision string

const (
	kneeGrow    kneeDecision = "grow"     // throughput rose: twice as many in flight
	kneeHold    kneeDecision = "hold"     // no gain, or no evidence: keep the width
	kneeBackOff kneeDecision = "back off" // the PLEG calls slowed past the serial pace: half as many
)

// Knee is the adaptive pool's controller for one phase: it decides how
// many removals may be in flight. It is not safe for concurrent use: the
// executor calls it with x.mu held. Its clock is injectable, for tests.
type Knee struct {
	now func() time.Time
	max int
	// width is the removals allowed in flight now.
	width int

	// The current epoch: when it began, the removals that ended in it,
	// and whether the pool was ever full in it.
	start time.Time
	done  int
	full  bool

	// serial is the mean latency of the serialN probes at one in
	// flight: the serial pace (unknown while serialN is below
	// kneeSerialSamples); recent are the last probes at the current
	// width above one. settled is false from a change of width until an
	// epoch has run at the new one: until then the removals started at
	// the width before are still in flight, and a probe says nothing of
	// this one.
	serial  time.Duration
	serialN int
	recent  []time.Duration
	settled bool

	// rate is the throughput of the last epoch at the width before;
	// ceiling is the width the pool does not grow past until it retries
	// (0 none), and held counts the epochs it held.
	rate    float64
	ceiling int
	held    int
}

// NewKnee returns a controller starting at one removal in flight and
// growing to at most widest.
func NewKnee(widest int, now func() time.Time) *Knee {
	return &Knee{now: now, max: max(widest, 1), width: 1, start: now(), settled: true}
}

// ScriptedKnee is NewKnee whose serial pace is already measured as
// serial, for tests that script the pool's clock: a long serial pace
// means no probe backs the pool off.
func ScriptedKnee(widest int, now func() time.Time, serial time.Duration) *Knee {
	k := NewKnee(widest, now)
	k.serial, k.serialN = serial, kneeSerialSamples
	return k
}

// limit is how many removals may be in flight now.
func (k *Knee) limit() int { return k.width }

// started notes a removal started, with inflight now in flight.
func (k *Knee) started(inflight int) {
	if inflight >= k.width {
		k.full = true
	}
}

// finished notes a removal ended and, when that closes the epoch (as
// many removals ended as are allowed in flight, over at least
// kneeMinEpoch), decides; it returns "" when the epoch goes on.
func (k *Knee) finished() kneeDecision {
	k.done++
	el := k.now().Sub(k.start)
	if k.done < k.width || el < kneeMinEpoch {
		return ""
	}
	return k.step(float64(k.done)/el.Seconds(), k.full)
}

// probed notes a probe of the PLEG's calls that took d. At one in flight
// it measures the serial pace; above, it backs off when the median of
// the last kneeSamples probes is slower than the serial pace plus its
// slack. A probe before the width settled is not counted. It returns
// kneeBackOff or "".
func (k *Knee) probed(d time.Duration) kneeDecision {
	if !k.settled {
		return ""
	}
	if k.width == 1 {
		k.serialN++
		k.serial += (d - k.serial) / time.Duration(k.serialN)
		return ""
	}
	k.recent = append(k.recent, d)
	if len(k.recent) > kneeSamples {
		k.recent = k.recent[1:]
	}
	if len(k.recent) == kneeSamples && medianLatency(k.recent) > k.serial+max(time.Duration(kneeSlack*float64(k.serial)), kneeSlackMin) {
		return k.backOff()
	}
	return ""
}

// step decides at the end of an epoch that ran at k.width with
// throughput rate (removals per second); full is whether the pool was
// ever full in it.
func (k *Knee) step(rate float64, full bool) kneeDecision {
	d, was := kneeHold, k.width
	switch {
	case k.serialN < kneeSerialSamples:
		// No probe has answered at one in flight: nothing says what a
		// serial pass costs the kubelet's calls, so the pool stays
		// serial.
	case !full:
		// The feeder could not fill the pool (the end of the phase,
		// the space target, a journal write): this width proved
		// nothing.
	case k.rate > 0 && rate < k.rate*kneeGain:
		// No gain over the width before: hold here, or go back to it
		// when this one is slower by as much (a rate of a few removals
		// is noisy).
		if rate < k.rate/kneeGain {
			k.setWidth(k.width / 2)
		}
		k.ceiling, k.rate = k.width, 0
	case k.width >= k.max || (k.ceiling > 0 && k.width >= k.ceiling):
	default:
		k.rate, k.held = rate, 0
		k.setWidth(2 * k.width)
		d = kneeGrow
	}
	if d == kneeHold {
		// After kneeRetry epochs of holding, the next one may grow
		// again.
		if k.held++; k.held >= kneeRetry {
			k.ceiling, k.rate, k.held = 0, 0, 0
		}
	}
	k.start, k.done, k.full = k.now(), 0, false
	k.settled = k.width == was
	return d
}

// backOff halves the width and keeps the pool at most there until it
// retries.
func (k *Knee) backOff() kneeDecision {
	k.setWidth(k.width / 2)
	k.ceiling, k.rate, k.held = k.width, 0, 0
	k.start, k.done, k.full = k.now(), 0, false
	return kneeBackOff
}

// setWidth sets the width within [1, max]; the probes of another width
// say nothing of this one, and the serial pace is measured afresh
// whenever the pool is back at one (the machine's load moves it).
func (k *Knee) setWidth(w int) {
	w = min(max(w, 1), k.max)
	if w == k.width {
		return
	}
	k.width, k.recent, k.settled = w, k.recent[:0], false
	if w == 1 {
		k.serial, k.serialN = 0, 0
	}
}

// medianLatency is the median of the probes' latencies (the upper
// middle one of an even count; 0 for none).
func medianLatency(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// probePLEG makes the calls the kubelet's PLEG makes on every relist,
// ListPodSandbox then ListContainers, and returns how long they took.
func probePLEG(ctx context.Context, r model.Reader, clock func() time.Time) (time.Duration, error) {
	start := clock()
	if _, err := r.ListSandboxes(ctx); err != nil {
		return 0, err
	}
	if _, err := r.ListContainers(ctx); err != nil {
		return 0, err
	}
	return clock().Sub(start), nil
}
