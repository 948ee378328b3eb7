package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodegc/nodegc/engine"
)

// namespace prefixes every metric.
const namespace = "nodegc"

// desc builds the description of nodegc_<subsystem>_<name>.
func desc(subsystem, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, nil)
}

// The metrics. Each help text says what a series counts and where the
// number comes from; every label value is one of a fixed set.
//
// Counters, histograms and the gauges set as a pass ends are
// client_golang's vectors, one set per Collector (vectors). The gauges
// below are read at scrape time from the latest state the passes left and
// from the journal's and the pod source's counts: the Collector sends them
// itself.
var (
	descImageTarget = desc("image_gc", "target_bytes",
		"Bytes the latest image GC attempt set out to free (the kubelet's bytesToFree; 0 below the high threshold, and it may be negative just above it); 0 before the first attempt.")
	descImageFreed = desc("image_gc", "freed_bytes",
		"Bytes the latest image GC attempt freed, by measure: runtime (the runtime-reported sizes of the removed images, the kubelet's figure) or statfs (the image filesystem's available bytes after minus before; 0 when the attempt removed nothing or was not measured); 0 before the first attempt.",
		"measure")
	descImageLastAttempt = desc("image_gc", "last_attempt_timestamp_seconds",
		"When the latest image GC attempt finished, in seconds since the epoch; the agent's start before the first attempt.")
	descImagesKept = desc("image_gc", "images_kept",
		"Images the latest image GC plan kept, by reason (in-use, pinned, sandbox-image, too-young, not-needed, bad-size).", "reason")
	descImages = desc("image_gc", "images",
		"Images on the node at the latest snapshot.")
	descFsCapacity = desc("image_fs", "capacity_bytes",
		"Capacity of the image filesystem at the latest snapshot or pass.")
	descFsAvailable = desc("image_fs", "available_bytes",
		"Available bytes of the image filesystem at the latest snapshot or pass.")
	descFsUsage = desc("image_fs", "usage_ratio",
		"Usage of the image filesystem as the kubelet computes it (100 - floor(available*100/capacity), / 100), at the latest snapshot or pass.")
	descDeadContainers = desc("container_gc", "dead_containers",
		"Containers not running on the node: those the latest snapshot saw, less those the passes since removed.")
	descInFlight = desc("gc", "pass_in_flight",
		"1 while a pass is running.")
	descPaused = desc("gc", "paused",
		"1 while the periodic passes are paused.")
	descShadow = desc("gc", "shadow",
		"1 in shadow mode (agent --shadow): every periodic pass is planned, nothing is removed, and nodegc_shadow_items_total compares the plans with what others removed.")

	descJournalLines = desc("journal", "lines_written_total",
		"Lines written to the deletion journal, by op (intent, removed, already-gone, failed, not-removed, skipped, not-run).", "op")
	descJournalFailures = desc("journal", "write_failures_total",
		"Writes and syncs of the deletion journal that failed (a pass stops before its next removal).")
	descReconciled = desc("journal", "reconciled_intents_total",
		"Intents an interrupted pass left without outcome, settled at a later start, by outcome (removed, not-removed).", "outcome")
	descPodSourceEnabled = desc("pod_source", "enabled",
		"1 when a pod source (the API server's view of this node's pods) is configured; 0 when off or without credentials.")
	descPodSourceSynced = desc("pod_source", "synced",
		"1 once the pod source's first list of pods completed; 0 before, and when there is no pod source.")
	descPodSourcePods = desc("pod_source", "pods",
		"Pods the pod source holds.")
	descPodSourceLastError = desc("pod_source", "last_error_timestamp_seconds",
		"When the pod source's current list or watch error was first seen, in seconds since the epoch; absent when the last list succeeded.")
	descEventStream = desc("event_stream", "connected",
		"1 while the runtime's container event stream is open; absent until the agent first tries to open it (a runtime without one never has it).")
)

// stateDescs are the descriptions of the metrics the Collector sends
// itself.
var stateDescs = []*prometheus.Desc{
	descImageTarget, descImageFreed, descImageLastAttempt, descImagesKept, descImages,
	descFsCapacity, descFsAvailable, descFsUsage, descDeadContainers, descInFlight, descPaused, descShadow,
	descJournalLines, descJournalFailures, descReconciled,
	descPodSourceEnabled, descPodSourceSynced, descPodSourcePods, descPodSourceLastError, descEventStream,
}

// vectors are one Collector's counters, histograms and the gauges a pass
// sets as it ends.
type vectors struct {
	buildInfo     *prometheus.GaugeVec
	highThreshold prometheus.Gauge
	lowThreshold  prometheus.Gauge

	attempts      *prometheus.CounterVec
	imageDuration *prometheus.HistogramVec
	targetTotal   *prometheus.CounterVec
	freedTotal    *prometheus.CounterVec

	// othersTotal and othersBytes count what vanished from the node
	// that no pass of nodegc removed.
	othersTotal *prometheus.CounterVec
	othersBytes prometheus.Counter
	// shadowItems and shadowPasses judge the shadow passes.
	shadowItems  *prometheus.CounterVec
	shadowPasses prometheus.Counter

	// items is the counter of each item kind.
	items map[engine.ItemKind]*prometheus.CounterVec

	passes       *prometheus.CounterVec
	passDuration *prometheus.HistogramVec
	lastPass     *prometheus.GaugeVec
}

// newVectors returns a Collector's vectors, with no series but those that
// are always there.
func newVectors() vectors {
	removals := func(subsystem, name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, []string{"reason", "result"})
	}
	v := vectors{
		buildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "build_info",
			Help: "nodegc's version and the Go version that built it; always 1."}, []string{"version", "goversion"}),
		highThreshold: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "image_gc", Name: "high_threshold_ratio",
			Help: "The image GC band's top: usage at or above which image GC runs (--image-gc-high-threshold / 100)."}),
		lowThreshold: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "image_gc", Name: "low_threshold_ratio",
			Help: "The image GC band's bottom: usage image GC frees down to (--image-gc-low-threshold / 100)."}),

		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "image_gc", Name: "attempts_total",
			Help: "Image GC attempts (every pass that ran image GC), by trigger (periodic, forced, reclaim-all), result (success, partial, noop, error) and reason (threshold, age, all-unused, below-threshold, stats-error, invalid-capacity, delete-error, insufficient-freed, journal-error, stopped)."},
			[]string{"trigger", "result", "reason"}),
		imageDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "image_gc", Name: "duration_seconds",
			Help:    "Duration of the passes that ran image GC, by trigger (a full pass includes its container GC).",
			Buckets: durationBuckets}, []string{"trigger"}),
		targetTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "image_gc", Name: "target_bytes_total",
			Help: "Bytes every image GC attempt set out to free, by trigger: the space target (bytesToFree, when positive) plus the runtime sizes of the images it planned to remove for age, or of every image a reclaim-all planned to remove; freed_bytes_total over it is the share of its aim an attempt met."},
			[]string{"trigger"}),
		freedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "image_gc", Name: "freed_bytes_total",
			Help: "Bytes freed by every image GC attempt, by measure (runtime or statfs; a statfs figure below zero, other writers filling the disk meanwhile, adds nothing) and trigger (periodic, forced, reclaim-all)."},
			[]string{"measure", "trigger"}),
		othersTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "gc", Name: "removed_by_others_total",
			Help: "Images and dead containers that vanished from the node between two snapshots and that no pass of nodegc removed: the kubelet's own GC, crictl or a person, by kind (image, container)."},
			[]string{"kind"}),
		othersBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "image_gc", Name: "removed_by_others_bytes_total",
			Help: "Runtime sizes of the images counted in nodegc_gc_removed_by_others_total{kind=\"image\"}."}),
		shadowItems: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "shadow", Name: "items_total",
			Help: "In shadow mode (agent --shadow), images and dead containers judged, by kind (image, container) and outcome: agreed (a shadow pass would have removed it and another removed it before the next shadow pass of its kind), nodegc_only (a shadow pass would have removed it and it was still there at the next), other_only (another removed it and the latest shadow pass would have kept it)."},
			[]string{"kind", "outcome"}),
		shadowPasses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: "shadow", Name: "passes_total",
			Help: "Shadow passes planned (agent --shadow): periodic passes that removed nothing."}),

		items: map[engine.ItemKind]*prometheus.CounterVec{
			engine.ItemImage: removals("image_gc", "deletions_total",
				"Images a pass tried to delete, by reason (space, age, reclaim) and result (removed, already-gone, skipped, failed, not-run)."),
			engine.ItemContainer: removals("container_gc", "removals_total",
				"Dead containers a pass tried to remove, by reason (pod-removable, per-container-limit, node-limit) and result (removed, already-gone, skipped, failed, not-run)."),
			engine.ItemSandbox: removals("container_gc", "sandbox_removals_total",
				"Pod sandboxes a pass tried to remove, by reason (pod-removable, superseded) and result."),
			engine.ItemLog: removals("container_gc", "log_removals_total",
				"Log files, pod log directories and /var/log/containers links a pass tried to remove, by reason (pod-removable, dangling, container-removed) and result."),
		},

		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "gc", Name: "passes_total",
			Help: "GC passes run, by kind (containers, images, full, reclaim-all), trigger and result (ok, error, stopped, skipped: a periodic container pass on a node unchanged since the last full one)."},
			[]string{"kind", "trigger", "result"}),
		passDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "gc", Name: "pass_duration_seconds",
			Help:    "Duration of the GC passes, by kind.",
			Buckets: durationBuckets}, []string{"kind"}),
		lastPass: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "gc", Name: "last_pass_timestamp_seconds",
			Help: "When the latest pass of each kind finished, in seconds since the epoch."}, []string{"kind"}),
	}
	v.zero()
	return v
}

// zero makes every series the vectors can have exist from the start, at
// 0, so that a query (increase, rate, a ratio) answers before the first
// attempt and counts the first one. Every label set is from a fixed list.
func (v *vectors) zero() {
	for _, trigger := range []string{TriggerPeriodic, TriggerForced, TriggerReclaimAll} {
		v.targetTotal.WithLabelValues(trigger)
		v.imageDuration.WithLabelValues(trigger)
		for _, m := range []string{MeasureRuntime, MeasureStatfs} {
			v.freedTotal.WithLabelValues(m, trigger)
		}
		for _, o := range attemptOutcomes(trigger) {
			v.attempts.WithLabelValues(trigger, o.result, o.reason)
		}
		for _, kind := range passKinds(trigger) {
			for _, result := range []string{"ok", "error", "stopped", "skipped"} {
				v.passes.WithLabelValues(string(kind), trigger, result)
			}
		}
	}
	for _, kind := range []engine.PassKind{engine.PassContainers, engine.PassImages, engine.PassFull, engine.PassReclaimAll} {
		v.passDuration.WithLabelValues(string(kind))
	}
	for kind, reasons := range itemReasons {
		for _, reason := range reasons {
			for _, o := range []engine.Outcome{engine.OutcomeRemoved, engine.OutcomeGone, engine.OutcomeSkipped, engine.OutcomeFailed, engine.OutcomeNotRun} {
				v.items[kind].WithLabelValues(reason, string(o))
			}
		}
	}
	for _, kind := range []string{OtherImage, OtherContainer} {
		v.othersTotal.WithLabelValues(kind)
		for _, o := range []string{ShadowAgreed, ShadowNodegcOnly, ShadowOtherOnly} {
			v.shadowItems.WithLabelValues(kind, o)
		}
	}
}

// collectors lists the vectors, for Describe and Collect.
func (v *vectors) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{v.buildInfo, v.highThreshold, v.lowThreshold,
		v.attempts, v.imageDuration, v.targetTotal, v.freedTotal, v.othersTotal, v.othersBytes, v.shadowItems, v.shadowPasses,
		v.passes, v.passDuration, v.lastPass}
	for _, kind := range []engine.ItemKind{engine.ItemImage, engine.ItemContainer, engine.ItemSandbox, engine.ItemLog} {
		cs = append(cs, v.items[kind])
	}
	return cs
}
