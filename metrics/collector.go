package metrics

import (
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodegc/nodegc/engine"
)

// Triggers of an image GC attempt: the trigger label.
const (
	TriggerPeriodic   = "periodic"
	TriggerForced     = "forced"
	TriggerReclaimAll = "reclaim-all"
)

// Results of an image GC attempt: the result label.
const (
	// ResultSuccess: images were removed and nothing failed.
	ResultSuccess = "success"
	// ResultPartial: images were removed, but a deletion failed, the
	// target was not met, or the pass was stopped.
	ResultPartial = "partial"
	// ResultNoop: nothing needed removing, and nothing failed.
	ResultNoop = "noop"
	// ResultError: nothing was removed and the attempt failed.
	ResultError = "error"
)

// Reasons of an image GC attempt: the reason label says why it acted, or
// why it failed.
const (
	// ReasonThreshold: usage reached the high threshold (the space pass).
	ReasonThreshold = "threshold"
	// ReasonAge: images idle longer than MaxAge went, below the threshold.
	ReasonAge = "age"
	// ReasonAllUnused: the eviction manager's reclaim of every unused image.
	ReasonAllUnused = "all-unused"
	// ReasonBelowThreshold: a noop below the threshold with nothing too idle.
	ReasonBelowThreshold = "below-threshold"
	// ReasonStatsError: the node could not be listed or measured, so
	// nothing was planned (the kubelet's missing image fs stats).
	ReasonStatsError = "stats-error"
	// ReasonInvalidCapacity: the image fs reported capacity 0
	// (InvalidDiskCapacity).
	ReasonInvalidCapacity = "invalid-capacity"
	// ReasonDeleteError: a deletion failed.
	ReasonDeleteError = "delete-error"
	// ReasonInsufficientFreed: the space pass ended below its target
	// (FreeDiskSpaceFailed); with result error, nothing was eligible.
	ReasonInsufficientFreed = "insufficient-freed"
	// ReasonJournalError: the deletion journal could not be written, so
	// the pass stopped before its next removal.
	ReasonJournalError = "journal-error"
	// ReasonStopped: the agent was stopped during the pass.
	ReasonStopped = "stopped"
)

// Freed-bytes measures: the measure label.
const (
	// MeasureRuntime sums the runtime-reported sizes of the removed images
	// (the kubelet's figure; shared layers make it an estimate).
	MeasureRuntime = "runtime"
	// MeasureStatfs is the image fs's available bytes after minus before.
	MeasureStatfs = "statfs"
)

// durationBuckets are the pass duration histograms' buckets, in seconds:
// from a no-op pass to a reclaim of thousands of images.
var durationBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// outcome is a result and reason pair of attempts_total.
type outcome struct{ result, reason string }

// attemptOutcomes are the result and reason pairs classify can give an
// attempt of trigger.
func attemptOutcomes(trigger string) []outcome {
	out := []outcome{
		{ResultNoop, ReasonStopped},
		{ResultError, ReasonStatsError}, {ResultError, ReasonInvalidCapacity},
		{ResultPartial, ReasonJournalError}, {ResultError, ReasonJournalError},
		{ResultPartial, ReasonDeleteError}, {ResultError, ReasonDeleteError},
		{ResultPartial, ReasonInsufficientFreed}, {ResultError, ReasonInsufficientFreed},
		{ResultPartial, ReasonStopped},
	}
	if trigger == TriggerReclaimAll {
		return append(out, outcome{ResultSuccess, ReasonAllUnused}, outcome{ResultNoop, ReasonAllUnused})
	}
	return append(out, outcome{ResultSuccess, ReasonThreshold}, outcome{ResultNoop, ReasonThreshold},
		outcome{ResultSuccess, ReasonAge}, outcome{ResultNoop, ReasonBelowThreshold})
}

// passKinds are the pass kinds trigger can start.
func passKinds(trigger string) []engine.PassKind {
	if trigger == TriggerReclaimAll {
		return []engine.PassKind{engine.PassReclaimAll}
	}
	return []engine.PassKind{engine.PassContainers, engine.PassImages, engine.PassFull}
}

// itemReasons are the reasons of each item kind's removals: the reason
// label of its counter.
var itemReasons = map[engine.ItemKind][]string{
	engine.ItemImage:     {string(engine.RemoveForSpace), string(engine.RemoveForAge), string(engine.RemoveForReclaim)},
	engine.ItemContainer: {string(engine.RemovePodRemovable), string(engine.RemovePerContainerLimit), string(engine.RemoveNodeLimit)},
	engine.ItemSandbox:   {engine.SandboxPodRemovable, engine.SandboxSuperseded},
	engine.ItemLog:       {engine.LogPodRemovable, engine.LogDangling, engine.LogPodDirRemoved, engine.ReasonContainerRemoved},
}

// journalOps are the journal's ops that always have a series.
var journalOps = []engine.JournalOp{
	engine.JournalIntent, engine.JournalRemoved, engine.JournalGone, engine.JournalFailed,
	engine.JournalNotRemoved, engine.JournalSkipped, engine.JournalNotRun,
}

// keepReasons are every reason an image stays, so that the kept gauge has
// a series for each (0 when none), and a query never finds no data.
var keepReasons = []engine.ImageKeepReason{
	engine.KeepInUse, engine.KeepPinned, engine.KeepSandboxImage,
	engine.KeepTooYoung, engine.KeepNotNeeded, engine.KeepBadSize,
}

// PodSourceState is the pod source's state, as the agent reads it.
type PodSourceState struct {
	// Enabled is false when there is no pod source: --pod-source=off, no
	// credentials, or a simulated node.
	Enabled bool
	// Synced reports whether its first list of pods completed.
	Synced bool
	// Pods is how many pods it holds.
	Pods int
	// LastError is when it last saw a list or watch error that is still
	// its latest; zero when none.
	LastError time.Time
}

// Options configure a Collector.
type Options struct {
	// Policy is the engine's effective policy: the GC band.
	Policy engine.Policy
	// Version is nodegc's version, for nodegc_build_info.
	Version string
	// Journal returns the journal's counts; nil means no journal.
	Journal func() engine.JournalStats
	// PodSource returns the pod source's state; nil means none. It is
	// called at each scrape and must be cheap (no API call).
	PodSource func() PodSourceState
	// Started is when the agent started: the time of the latest pass of
	// each kind and of the latest attempt until there is one, so that
	// "how long since the last pass" answers from the start (zero means
	// now).
	Started time.Time
	// ImagePeriod and ContainerPeriod are the agent's pass periods: with
	// the kubelet's, the windows of the shadow comparison
	// (engine.ShadowWindows); zero is the kubelet's.
	ImagePeriod, ContainerPeriod time.Duration
	// Extra are more collectors NewHandler serves beside this one (the
	// agent's forecasts).
	Extra []prometheus.Collector
}

// Collector keeps what the agent's passes measured and serves it as a
// prometheus.Collector. Its Observe methods update it; a scrape reads
// client_golang's vectors, the latest state the passes left, and the
// journal's and the pod source's counts, never the node. It is safe for
// concurrent use.
type Collector struct {
	o   Options
	vec vectors

	// mu guards the latest state below, and makes a scrape or a summary
	// see a pass's report whole: the Observe methods update the vectors
	// and the state under it, and Collect and Summary read under it.
	mu          sync.Mutex
	last        *attempt
	kept        map[engine.ImageKeepReason]int
	images      int
	haveImages  bool
	fs          *engine.FsStats
	dead        int
	haveDead    bool
	inFlight    bool
	paused      bool
	streamKnown bool
	stream      bool
	// others tells nodegc's removals from those of others, and judges
	// the shadow passes; tally is its shadow tally as last counted.
	others *engine.OthersTracker
	tally  engine.ShadowTally
	shadow bool
}

// attempt is the latest image GC attempt's figures.
type attempt struct {
	at           time.Time
	target       int64
	runtimeFreed int64
	statfsFreed  *int64
	// result and reason are its attempts_total labels.
	result, reason string
}

// New returns a Collector with nothing observed.
func New(o Options) *Collector {
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	c := &Collector{o: o, vec: newVectors(), kept: map[engine.ImageKeepReason]int{}, others: engine.NewOthersTracker(o.ImagePeriod, o.ContainerPeriod)}
	c.vec.buildInfo.WithLabelValues(o.Version, runtime.Version()).Set(1)
	for _, kind := range []engine.PassKind{engine.PassContainers, engine.PassImages, engine.PassFull, engine.PassReclaimAll} {
		c.vec.lastPass.WithLabelValues(string(kind)).Set(unixSeconds(o.Started))
	}
	c.vec.highThreshold.Set(float64(o.Policy.Image.HighThresholdPercent) / 100)
	c.vec.lowThreshold.Set(float64(o.Policy.Image.LowThresholdPercent) / 100)
	return c
}

// ObserveSnapshot records what a snapshot saw: the image fs, the images
// and the dead containers. It fits engine.Options.OnSnapshot.
func (c *Collector) ObserveSnapshot(s engine.Snapshot) {
	dead := 0
	for _, ct := range s.Containers {
		if ct.State != engine.ContainerRunning {
			dead++
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fs := s.ImageFs
	c.fs = &fs
	c.images, c.haveImages = len(s.Images), true
	c.dead, c.haveDead = dead, true
	c.countOthers(c.others.Snapshot(s))
}

// ObserveStatus records the scheduler's status: the pass in flight and
// whether the periodic passes are paused.
func (c *Collector) ObserveStatus(st engine.Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight = st.Running != ""
	c.paused = st.Paused
	c.shadow = st.Shadow
}

// ObserveEventStream records whether the runtime's container event stream
// is open.
func (c *Collector) ObserveEventStream(connected bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streamKnown, c.stream = true, connected
}

// ObserveReport records a finished real pass: its image GC attempt, its
// items, its duration and the image fs after it. A shadow pass's plan is
// what the shadow tally judges; other dry runs are ignored.
func (c *Collector) ObserveReport(r engine.PassReport) {
	if r.DryRun {
		if r.Shadow {
			c.mu.Lock()
			c.others.Report(r)
			c.countOthers(nil)
			c.mu.Unlock()
		}
		return
	}
	trigger := passTrigger(r)
	secs := max(r.FinishedAt.Sub(r.StartedAt).Seconds(), 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.others.Report(r)
	c.vec.passes.WithLabelValues(string(r.Kind), trigger, passResult(r)).Inc()
	if r.Skipped == "" {
		// A skipped pass ran nothing: its no time is no pass's duration.
		c.vec.passDuration.WithLabelValues(string(r.Kind)).Observe(secs)
	}
	c.vec.lastPass.WithLabelValues(string(r.Kind)).Set(unixSeconds(r.FinishedAt))
	removedContainers := 0
	for _, it := range r.Items {
		if v, ok := c.vec.items[it.Kind]; ok {
			v.WithLabelValues(it.Reason, string(it.Outcome)).Inc()
		}
		if it.Kind == engine.ItemContainer && (it.Outcome == engine.OutcomeRemoved || it.Outcome == engine.OutcomeGone) {
			removedContainers++
		}
	}
	if c.haveDead {
		c.dead = max(c.dead-removedContainers, 0)
	}
	if fs := cmpFs(r.ImageFsAfter, r.ImageFsBefore); fs != nil {
		f := *fs
		c.fs = &f
	}
	result, reason, ok := classify(r)
	if !ok {
		return
	}
	c.vec.attempts.WithLabelValues(trigger, result, reason).Inc()
	c.vec.imageDuration.WithLabelValues(trigger).Observe(secs)
	a := &attempt{at: r.FinishedAt, target: r.Plan.ImageGC.BytesToFree, runtimeFreed: r.EstimatedBytesFreed, statfsFreed: r.MeasuredBytesFreed, result: result, reason: reason}
	c.last = a
	c.vec.targetTotal.WithLabelValues(trigger).Add(float64(aim(r.Kind, r.Plan.ImageGC)))
	c.vec.freedTotal.WithLabelValues(MeasureRuntime, trigger).Add(float64(max(a.runtimeFreed, 0)))
	if a.statfsFreed != nil {
		c.vec.freedTotal.WithLabelValues(MeasureStatfs, trigger).Add(float64(max(*a.statfsFreed, 0)))
	}
	if !r.Plan.EvaluatedAt.IsZero() {
		c.kept = map[engine.ImageKeepReason]int{}
		for _, k := range r.Plan.ImageGC.Keep {
			c.kept[k.Reason]++
		}
	}
}

// aim is what an image GC attempt set out to free, the increment of
// target_bytes_total: the space target when positive, plus the sizes of
// the images planned for age; for a reclaim-all, the sizes of every
// image planned. Only the space pass has a kubelet target (bytesToFree);
// counting the planned sizes of the others keeps freed over target a
// share of the aim whatever started the attempt.
func aim(kind engine.PassKind, p engine.ImagePlan) int64 {
	var total int64
	if kind != engine.PassReclaimAll {
		total = max(p.BytesToFree, 0)
	}
	for _, rm := range p.Remove {
		if kind == engine.PassReclaimAll || rm.Reason == engine.RemoveForAge {
			total += max(rm.SizeBytes, 0)
		}
	}
	return total
}

// cmpFs returns the first non-nil filesystem.
func cmpFs(fss ...*engine.FsStats) *engine.FsStats {
	for _, fs := range fss {
		if fs != nil {
			return fs
		}
	}
	return nil
}

// passTrigger is what started the pass: the periodic schedule, an
// operator, or the reclaim of everything unused.
func passTrigger(r engine.PassReport) string {
	switch {
	case r.Kind == engine.PassReclaimAll:
		return TriggerReclaimAll
	case r.Forced:
		return TriggerForced
	}
	return TriggerPeriodic
}

// passResult sums up a pass: ok, error (a pass-level error or a failed
// item), stopped, or skipped (a periodic container pass on a node that
// had not changed, engine.Engine.RunPeriodic).
func passResult(r engine.PassReport) string {
	switch {
	case r.Skipped != "":
		return "skipped"
	case r.Error != "" || r.Count(engine.OutcomeFailed) > 0:
		return "error"
	case r.Stopped != "":
		return "stopped"
	}
	return "ok"
}

// classify names the result and reason of the pass's image GC attempt;
// ok is false for a pass without image GC (a container pass).
func classify(r engine.PassReport) (result, reason string, ok bool) {
	switch r.Kind {
	case engine.PassImages, engine.PassFull, engine.PassReclaimAll:
	default:
		return "", "", false
	}
	var removed, failed int
	for _, it := range r.Items {
		if it.Kind != engine.ItemImage {
			continue
		}
		switch it.Outcome {
		case engine.OutcomeRemoved:
			removed++
		case engine.OutcomeFailed:
			failed++
		}
	}
	someOr := func(some, none string) string {
		if removed > 0 {
			return some
		}
		return none
	}
	has := func(reason string) bool {
		for _, ev := range r.Events {
			if ev.Reason == reason {
				return true
			}
		}
		return false
	}
	switch {
	case r.Plan.EvaluatedAt.IsZero() && r.Error != "":
		return ResultError, ReasonStatsError, true
	case has(engine.EventInvalidDiskCapacity):
		return ResultError, ReasonInvalidCapacity, true
	case r.Error != "":
		return someOr(ResultPartial, ResultError), ReasonJournalError, true
	case failed > 0:
		return someOr(ResultPartial, ResultError), ReasonDeleteError, true
	case has(engine.EventFreeDiskSpaceFailed):
		return someOr(ResultPartial, ResultError), ReasonInsufficientFreed, true
	case r.Stopped != "":
		return someOr(ResultPartial, ResultNoop), ReasonStopped, true
	}
	why := ReasonAge
	switch {
	case r.Kind == engine.PassReclaimAll:
		why = ReasonAllUnused
	case r.Plan.ImageGC.Triggered:
		why = ReasonThreshold
	case removed == 0:
		why = ReasonBelowThreshold
	}
	return someOr(ResultSuccess, ResultNoop), why, true
}

// Describe sends the description of every metric: the vectors' and the
// state's.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range c.vec.collectors() {
		v.Describe(ch)
	}
	for _, d := range stateDescs {
		ch <- d
	}
}

// Collect sends the vectors and the gauges read at scrape time: the
// latest attempt, snapshot and scheduler status as the passes left them,
// the journal's counts and the pod source's state. It reads nothing else.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var js engine.JournalStats
	if c.o.Journal != nil {
		js = c.o.Journal()
	}
	var ps PodSourceState
	if c.o.PodSource != nil {
		ps = c.o.PodSource()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.vec.collectors() {
		v.Collect(ch)
	}
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v int64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}

	// Image GC: the latest attempt, plan and snapshot; every series is
	// there from the start, and after an attempt that measured nothing.
	a := attempt{at: c.o.Started}
	if c.last != nil {
		a = *c.last
	}
	var statfs int64
	if a.statfsFreed != nil {
		statfs = *a.statfsFreed
	}
	gauge(descImageLastAttempt, unixSeconds(a.at))
	gauge(descImageTarget, float64(a.target))
	gauge(descImageFreed, float64(a.runtimeFreed), MeasureRuntime)
	gauge(descImageFreed, float64(statfs), MeasureStatfs)
	for _, r := range keepReasons {
		gauge(descImagesKept, float64(c.kept[r]), string(r))
	}
	gauge(descImages, float64(c.images))
	if fs := c.fs; fs != nil {
		gauge(descFsCapacity, float64(fs.CapacityBytes))
		gauge(descFsAvailable, float64(fs.AvailableBytes))
		if pct, err := engine.UsagePercent(*fs); err == nil {
			gauge(descFsUsage, float64(pct)/100)
		}
	}
	gauge(descDeadContainers, float64(c.dead))
	gauge(descInFlight, boolValue(c.inFlight))
	gauge(descPaused, boolValue(c.paused))
	gauge(descShadow, boolValue(c.shadow))

	// The machinery.
	if c.o.Journal != nil {
		for _, op := range journalOps {
			counter(descJournalLines, js.Lines[op], string(op))
		}
		for op, v := range js.Lines {
			if !slices.Contains(journalOps, op) {
				counter(descJournalLines, v, string(op))
			}
		}
		for _, op := range []engine.JournalOp{engine.JournalRemoved, engine.JournalNotRemoved} {
			counter(descReconciled, js.Reconciled[op], string(op))
		}
		counter(descJournalFailures, js.FailedWrites)
	}
	gauge(descPodSourceEnabled, boolValue(ps.Enabled))
	gauge(descPodSourceSynced, boolValue(ps.Enabled && ps.Synced))
	if ps.Enabled {
		gauge(descPodSourcePods, float64(ps.Pods))
		if !ps.LastError.IsZero() {
			gauge(descPodSourceLastError, unixSeconds(ps.LastError))
		}
	}
	if c.streamKnown {
		gauge(descEventStream, boolValue(c.stream))
	}
}

// unixSeconds is t as a Prometheus timestamp value.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// boolValue is 1 for true, 0 for false.
func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
