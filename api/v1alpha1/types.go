package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resource's names, as deploy/crd.yaml declares them.
const (
	// Group is the API group of the NodeGC resource.
	Group = "nodegc.io"
	// Version is this package's version of the group.
	Version = "v1alpha1"
	// Kind is the object's kind.
	Kind = "NodeGC"
	// ListKind is the kind of a list of NodeGC objects.
	ListKind = "NodeGCList"
	// Resource is the resource's plural, in URLs and RBAC rules.
	Resource = "nodegcs"
	// APIVersion is the objects' apiVersion field.
	APIVersion = Group + "/" + Version
	// MaxStatusBytes bounds a status as JSON: small objects keep a list
	// of 5,000 of them quick (node-feature-discovery's 130 kB NodeFeature
	// made LIST hang at 4,000 nodes).
	MaxStatusBytes = 2048
)

var (
	// GroupVersion is the resource's group and version.
	GroupVersion = schema.GroupVersion{Group: Group, Version: Version}
	// GroupVersionResource addresses the resource with the dynamic client.
	GroupVersionResource = GroupVersion.WithResource(Resource)
	// GroupVersionKind is the objects' type.
	GroupVersionKind = GroupVersion.WithKind(Kind)
)

// NodeGC is one node's garbage collection as its agent last reported it:
// cluster-scoped, named after its node and owned by its Node, so it goes
// when the node goes. The agent writes Status; Spec is for commands.
type NodeGC struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeGCSpec   `json:"spec,omitempty"`
	Status NodeGCStatus `json:"status,omitempty"`
}

// NodeGCSpec holds the commands to the node's agent. Through the API
// server, RBAC (update on nodegcs) decides who may ask and the audit log
// records who did; deploy/policy.yaml denies a command whose By is not
// the user who wrote it. The agent acknowledges each by its ID in Status.
type NodeGCSpec struct {
	// Pass asks for one pass now, paused or not; a new ID asks again.
	Pass *PassCommand `json:"pass,omitempty"`
	// Pause asks the agent to pause its periodic passes until Until; a
	// new ID asks again. Removing it, or an Until already past, resumes
	// them (if the agent's pause is this object's).
	Pause *PauseCommand `json:"pause,omitempty"`
}

// PassCommand asks for one pass.
type PassCommand struct {
	// ID names the request; the agent runs each ID once.
	ID string `json:"id"`
	// Kind is images, containers, full or reclaim-all.
	Kind string `json:"kind"`
	// Preview asks for a dry-run: the plan, and no removal.
	Preview bool `json:"preview,omitempty"`
	// By is the user who asked (checked by the admission policy).
	By string `json:"by"`
}

// PauseCommand asks for a pause of the periodic passes.
type PauseCommand struct {
	// ID names the request.
	ID string `json:"id"`
	// Until is when the pause ends by itself: every pause ends.
	Until metav1.Time `json:"until"`
	// By is the user who asked (checked by the admission policy).
	By string `json:"by"`
}

// CommandOutcome is the agent's answer to a PassCommand.
type CommandOutcome struct {
	// ID is the command's.
	ID string `json:"id"`
	// Result is running, done (the pass's own result is in Pass),
	// refused (a bad command: Message says why) or error.
	Result string `json:"result"`
	// Message says more, in one line; at most 128 bytes.
	Message string `json:"message,omitempty"`
	// At is when Result was reached.
	At metav1.Time `json:"at"`
	// Pass is the pass it ran; nil until it ends.
	Pass *Pass `json:"pass,omitempty"`
}

// NodeGCStatus is the node's row of the fleet view. It holds counts,
// times and short words only (no image, pod or container names), and
// stays under MaxStatusBytes whatever the node holds.
type NodeGCStatus struct {
	// Version is the agent's nodegc version.
	Version string `json:"version,omitempty"`
	// StartedAt is when the agent started.
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// HeartbeatTime is when the agent last wrote this status. It writes
	// on a change and at least every HeartbeatPeriod, so a row older
	// than a few periods is stale.
	HeartbeatTime *metav1.Time `json:"heartbeatTime,omitempty"`
	// ImageFs is the image filesystem as last measured; nil before the
	// first measure.
	ImageFs *ImageFs `json:"imageFs,omitempty"`
	// Band is the image GC band: a pass frees space when usage reaches
	// High, down to Low.
	Band Band `json:"band"`
	// LastImagePass is the latest image GC attempt (an image, full or
	// reclaim-all pass); nil before one.
	LastImagePass *Pass `json:"lastImagePass,omitempty"`
	// LastContainerPass is the latest pass that removes containers (a
	// container, full or reclaim-all pass) and ran (a periodic one that
	// found the node unchanged is skipped, and not shown); nil before
	// one.
	//
	// Of both passes: one that removed nothing and ended as the one
	// before is not written by itself (its time comes with the next
	// write), and one that removed or failed stays until it is written,
	// even if quiet passes followed it.
	LastContainerPass *Pass `json:"lastContainerPass,omitempty"`
	// Kept counts the images the latest image plan kept, by reason
	// (in-use, pinned, sandbox-image, too-young, not-needed, ...).
	Kept map[string]int32 `json:"kept,omitempty"`
	// DeadContainers counts the containers not running, as the latest
	// snapshot and pass left them; nil when unknown.
	DeadContainers *int32 `json:"deadContainers,omitempty"`
	// PodSource is the pod source's health: off, syncing, synced or error.
	PodSource string `json:"podSource,omitempty"`
	// EventStream is the runtime's container event stream: unknown, live
	// or down.
	EventStream string `json:"eventStream,omitempty"`
	// Paused is set while the periodic passes are paused.
	Paused *Pause `json:"paused,omitempty"`
	// Command is the outcome of the latest PassCommand.
	Command *CommandOutcome `json:"command,omitempty"`
	// Forecast is when DiskPressure that no GC prevents is forecast;
	// nil before the agent's first reading.
	Forecast *Forecast `json:"forecast,omitempty"`
}

// Forecast is the forecast of the eviction line (docs/forecast.md): when
// the bytes available once every unused image is gone fall below
// imagefs.available's eviction threshold, which is DiskPressure that no
// GC prevents. The image GC high threshold's forecast, crossed routinely
// on a busy node, is in the agent's metrics alone: the status stays
// under MaxStatusBytes. The times are rounded to a step that grows with
// their distance (about a tenth of it, from a minute to a day), so that
// a steady forecast is not a write at every reading.
type Forecast struct {
	// Status is crossed, filling, not-filling, not-enough-history or
	// no-line (the metric nodegc_forecast_status's).
	Status string `json:"status"`
	// At is when the line is forecast to be crossed; set while filling
	// alone, and not when that is more than a year away.
	At *metav1.Time `json:"at,omitempty"`
	// Earliest and Latest bound At (a 90% interval); Latest is nil when
	// the fill may stop.
	Earliest *metav1.Time `json:"earliest,omitempty"`
	Latest   *metav1.Time `json:"latest,omitempty"`
}

// ImageFs is the image filesystem's size and the kubelet's usage of it.
type ImageFs struct {
	CapacityBytes  int64 `json:"capacityBytes"`
	AvailableBytes int64 `json:"availableBytes"`
	// UsagePercent is 100 - floor(available*100/capacity), the kubelet's
	// image GC usage (image_gc_manager.go).
	UsagePercent int32 `json:"usagePercent"`
}

// Band is the image GC thresholds, in percent of the image filesystem.
type Band struct {
	High int32 `json:"high"`
	Low  int32 `json:"low"`
}

// Pass is one GC pass's outcome, as the agent's metrics label it.
type Pass struct {
	// At is when the pass finished.
	At metav1.Time `json:"at"`
	// Kind is the pass: images, containers, full or reclaim-all.
	Kind string `json:"kind"`
	// Trigger is periodic, forced or reclaim-all.
	Trigger string `json:"trigger"`
	// Result is ok, error or stopped for a pass; for an image GC attempt
	// it is the nodegc_image_gc_attempts_total result.
	Result string `json:"result"`
	// Reason says why an image GC attempt ended as it did; empty for a
	// container pass.
	Reason string `json:"reason,omitempty"`
	// Removed counts the items the pass removed.
	Removed int32 `json:"removed"`
	// Failed counts the items whose removal failed.
	Failed int32 `json:"failed,omitempty"`
	// TargetBytes is what an image GC attempt set out to free.
	TargetBytes int64 `json:"targetBytes,omitempty"`
	// FreedBytes sums the runtime's sizes of the images removed.
	FreedBytes int64 `json:"freedBytes,omitempty"`
	// MeasuredBytes is the image filesystem's gain; nil when not measured.
	MeasuredBytes *int64 `json:"measuredBytes,omitempty"`
}

// Pause is a pause of the periodic passes: since when, who asked and when
// it ends by itself.
type Pause struct {
	// ID is the PauseCommand's; empty for a pause asked on the node.
	ID string `json:"id,omitempty"`
	// Since is when the agent saw the pause begin.
	Since metav1.Time `json:"since"`
	// By names who asked (a user, or "local" for the node's own control
	// socket); empty when unknown.
	By string `json:"by,omitempty"`
	// Until is when the pause ends by itself; nil when it lasts until a
	// resume.
	Until *metav1.Time `json:"until,omitempty"`
}
