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
var (
	descBuildInfo = desc("", "build_info", "nodegc's version and the Go version that built it; always 1.", "version", "goversion")

	descImageAttempts = desc("image_gc", "attempts_total",
		"Image GC attempts (every pass that ran image GC), by trigger (periodic, forced, reclaim-all), result (success, partial, noop, error) and reason (threshold, age, all-unused, below-threshold, stats-error, invalid-capacity, delete-error, insufficient-freed, journal-error, stopped).",
		"trigger", "result", "reason")
	descImageDuration = desc("image_gc", "duration_seconds",
		"Duration of the passes that ran image GC, by trigger (a full pass includes its container GC).", "trigger")
	descImageTarget = desc("image_gc", "target_bytes",
		"Bytes the latest image GC attempt set out to free (the kubelet's bytesToFree; 0 below the high threshold, and it may be negative just above it).")
	descImageTargetTotal = desc("image_gc", "target_bytes_total",
		"Sum of the positive targets of every image GC attempt.")
	descImageFreed = desc("image_gc", "freed_bytes",
		"Bytes the latest image GC attempt freed, by measure: runtime (the runtime-reported sizes of the removed images, the kubelet's figure) or statfs (the image filesystem's available bytes after minus before).",
		"measure")
	descImageFreedTotal = desc("image_gc", "freed_bytes_total",
		"Bytes freed by every image GC attempt, by measure (runtime or statfs; a statfs figure below zero, other writers filling the disk meanwhile, adds nothing).",
		"measure")
	descImageLastAttempt = desc("image_gc", "last_attempt_timestamp_seconds",
		"When the latest image GC attempt finished, in seconds since the epoch.")
	descImagesKept = desc("image_gc", "images_kept",
		"Images the latest image GC plan kept, by reason (in-use, pinned, sandbox-image, too-young, not-needed, bad-size).", "reason")
	descImages = desc("image_gc", "images",
		"Images on the node at the latest snapshot.")
	descHighThreshold = desc("image_gc", "high_threshold_ratio",
		"The image GC band's top: usage at or above which image GC runs (--image-gc-high-threshold / 100).")
	descLowThreshold = desc("image_gc", "low_threshold_ratio",
		"The image GC band's bottom: usage image GC frees down to (--image-gc-low-threshold / 100).")
	descFsCapacity = desc("image_fs", "capacity_bytes",
		"Capacity of the image filesystem at the latest snapshot or pass.")
	descFsAvailable = desc("image_fs", "available_bytes",
		"Available bytes of the image filesystem at the latest snapshot or pass.")
	descFsUsage = desc("image_fs", "usage_ratio",
		"Usage of the image filesystem as the kubelet computes it (100 - floor(available*100/capacity), / 100), at the latest snapshot or pass.")

	descImageDeletions = desc("image_gc", "deletions_total",
		"Images a pass tried to delete, by reason (space, age, reclaim) and result (removed, already-gone, skipped, failed, not-run).", "reason", "result")
	descContainerRemovals = desc("container_gc", "removals_total",
		"Dead containers a pass tried to remove, by reason (pod-removable, per-container-limit, node-limit) and result (removed, already-gone, skipped, failed, not-run).", "reason", "result")
	descSandboxRemovals = desc("container_gc", "sandbox_removals_total",
		"Pod sandboxes a pass tried to remove, by reason (pod-removable, superseded) and result.", "reason", "result")
	descLogRemovals = desc("container_gc", "log_removals_total",
		"Log files, pod log directories and /var/log/containers links a pass tried to remove, by reason (pod-removable, dangling, container-removed) and result.", "reason", "result")
	descDeadContainers = desc("container_gc", "dead_containers",
		"Containers not running on the node: those the latest snapshot saw, less those the passes since removed.")

	descPasses = desc("gc", "passes_total",
		"GC passes run, by kind (containers, images, full, reclaim-all), trigger and result (ok, error, stopped, skipped: a periodic container pass on a node unchanged since the last full one).", "kind", "trigger", "result")
	descPassDuration = desc("gc", "pass_duration_seconds",
		"Duration of the GC passes, by kind.", "kind")
	descLastPass = desc("gc", "last_pass_timestamp_seconds",
		"When the latest pass of each kind finished, in seconds since the epoch.", "kind")
	descInFlight = desc("gc", "pass_in_flight",
		"1 while a pass is running.")
	descPaused = desc("gc", "paused",
		"1 while the periodic passes are paused.")

	descJournalLines = desc("journal", "lines_written_total",
		"Lines written to the deletion journal, by op (intent, removed, already-gone, failed, not-removed, skipped, not-run).", "op")
	descJournalFailures = desc("journal", "write_failures_total",
		"Writes and syncs of the deletion journal that failed (a pass stops before its next removal).")
	descReconciled = desc("journal", "reconciled_intents_total",
		"Intents an interrupted pass left without outcome, settled at a later start, by outcome (removed, not-removed).", "outcome")
	descPodSourceEnabled = desc("pod_source", "enabled",
		"1 when a pod source (the API server's view of this node's pods) is configured; 0 when off or without credentials.")
	descPodSourceSynced = desc("pod_source", "synced",
		"1 once the pod source's first list of pods completed.")
	descPodSourcePods = desc("pod_source", "pods",
		"Pods the pod source holds.")
	descPodSourceLastError = desc("pod_source", "last_error_timestamp_seconds",
		"When the pod source's current list or watch error was first seen, in seconds since the epoch; absent when the last list succeeded.")
	descEventStream = desc("event_stream", "connected",
		"1 while the runtime's container event stream is open.")
)

// itemDescs is the counter of each item kind.
var itemDescs = map[engine.ItemKind]*prometheus.Desc{
	engine.ItemImage:     descImageDeletions,
	engine.ItemContainer: descContainerRemovals,
	engine.ItemSandbox:   descSandboxRemovals,
	engine.ItemLog:       descLogRemovals,
}
