package model

import (
	"encoding/json"
	"time"
)

// Plan is what one GC pass would do, decided purely from a Snapshot, a
// Policy and an evaluation time. It is the GCPlan contract of docs/design.md. A
// dry-run is a Plan that is not applied, so a preview and a real pass never
// disagree about what they select.
type Plan struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	EvaluatedAt time.Time `json:"evaluatedAt"`
	// Pass is the kind of pass the plan was made for.
	Pass        PassKind      `json:"pass"`
	Policy      Policy        `json:"policy"`
	ImageGC     ImagePlan     `json:"imageGC"`
	ContainerGC ContainerPlan `json:"containerGC"`
	SandboxGC   SandboxPlan   `json:"sandboxGC"`
	LogGC       LogPlan       `json:"logGC"`
	DiskReserve DiskReserve   `json:"diskReserve"`
}

// PassKind says which collectors a pass runs.
type PassKind string

// Pass kinds.
const (
	// PassImages is the kubelet's periodic image GC (MaxAge pass, then
	// space pass).
	PassImages PassKind = "images"
	// PassContainers is the kubelet's periodic container GC: containers,
	// then sandboxes, then logs.
	PassContainers PassKind = "containers"
	// PassFull is a container pass followed by an image pass.
	PassFull PassKind = "full"
	// PassReclaimAll is the eviction manager's node-level reclaim: every
	// dead container of terminated pods, then every unused, unpinned image
	// at least MinAge old, whatever the thresholds.
	PassReclaimAll PassKind = "reclaim-all"
)

// ImageRemoveReason says why an image is removed; the constants are the
// JSON values.
type ImageRemoveReason string

// Image removal reasons.
const (
	RemoveForSpace ImageRemoveReason = "space"
	RemoveForAge   ImageRemoveReason = "age"
	// RemoveForReclaim is used by PassReclaimAll.
	RemoveForReclaim ImageRemoveReason = "reclaim"
)

// ImageKeepReason says why an image stays; the constants are the JSON values.
type ImageKeepReason string

// Image keep reasons. KeepPinned is only for an image the runtime pins; a
// sandbox image the runtime does not pin is KeepSandboxImage, since
// calling it pinned would not be true.
const (
	KeepInUse  ImageKeepReason = "in-use"
	KeepPinned ImageKeepReason = "pinned"
	// KeepSandboxImage keeps a sandbox (pause) image the runtime does not
	// pin: nodegc never removes one, pinned or not.
	KeepSandboxImage ImageKeepReason = "sandbox-image"
	KeepTooYoung     ImageKeepReason = "too-young"
	KeepNotNeeded    ImageKeepReason = "not-needed"
	// KeepBadSize keeps an image whose runtime-reported size is impossible
	// (negative, as a wrapped unsigned size reads): its removal could not
	// be counted toward the target, so nodegc leaves it alone.
	KeepBadSize ImageKeepReason = "bad-size"
)

// ImagePlan is the image collector's decision.
type ImagePlan struct {
	// UsagePercent is 100 - floor(available*100/capacity), the kubelet's
	// rounding (up).
	UsagePercent int `json:"usagePercent"`
	// CapacityBytes is the image filesystem's capacity the plan used;
	// the FreeDiskSpaceFailed message quotes it.
	CapacityBytes int64 `json:"capacityBytes"`
	Triggered     bool  `json:"triggered"`
	// BytesToFree is floor(capacity*(100-low)/100) - available when GC is
	// triggered (it may then be zero or negative, and the space pass still
	// removes one image, as the kubelet does), and 0 when it is not.
	BytesToFree int64 `json:"bytesToFree"`
	// BytesFreed is what the plan expects to free (runtime-reported sizes).
	BytesFreed int64          `json:"bytesFreed"`
	Remove     []ImageRemoval `json:"remove"`
	Keep       []ImageKeep    `json:"keep"`
	Events     []Event        `json:"events"`
	// Order is every image ID in eviction (LRU) order, candidates and kept
	// images alike, so a reader can draw the ranked list.
	Order []string `json:"order,omitempty"`
	// CutLine is the number of entries of Order above the cut line: the
	// space pass stops after them. 0 when nothing is removed for space.
	CutLine int `json:"cutLine"`
}

// ImageRemoval is one image the plan removes, in execution order.
type ImageRemoval struct {
	ID          string            `json:"id"`
	SizeBytes   int64             `json:"sizeBytes"`
	Reason      ImageRemoveReason `json:"reason"`
	RepoTags    []string          `json:"repoTags,omitempty"`
	RepoDigests []string          `json:"repoDigests,omitempty"`
	// Detail explains the decision for a person ("idle 3h10m > MaxAge 3h").
	Detail string `json:"detail,omitempty"`
}

// ImageKeep is one image the plan keeps, and why.
type ImageKeep struct {
	ID     string          `json:"id"`
	Reason ImageKeepReason `json:"reason"`
	// Detail names the container using it, the time it becomes eligible,
	// or whether the runtime pins it (the Detail* constants).
	Detail string `json:"detail"`
	// EligibleAt is set for KeepTooYoung.
	EligibleAt *time.Time `json:"eligibleAt,omitempty"`
}

// Keep details of the pinned and sandbox images, shared by every view so
// that each says the same true thing.
const (
	DetailPinned               = "pinned by the runtime"
	DetailSandboxImagePinned   = "sandbox image, pinned by the runtime"
	DetailSandboxImageUnpinned = "sandbox image (not pinned by the runtime)"
)

// ContainerRemoveReason says why a dead container is removed; the
// constants are the JSON values.
type ContainerRemoveReason string

// Container removal reasons.
const (
	RemovePodRemovable      ContainerRemoveReason = "pod-removable"
	RemovePerContainerLimit ContainerRemoveReason = "per-container-limit"
	RemoveNodeLimit         ContainerRemoveReason = "node-limit"
)

// ContainerPlan is the container collector's decision.
type ContainerPlan struct {
	Remove []ContainerRemoval `json:"remove"`
}

// ContainerRemoval is one dead container the plan removes, in order.
type ContainerRemoval struct {
	ID     string `json:"id"`
	PodUID string `json:"podUID"`
	// PodNamespace and PodName name the pod, from its sandbox (the
	// container's own, else any of the pod's); empty when the snapshot
	// has no sandbox of the pod.
	PodNamespace string                `json:"podNamespace"`
	PodName      string                `json:"podName"`
	Name         string                `json:"name"`
	Reason       ContainerRemoveReason `json:"reason"`
	// State is the container's state when planned; an UNKNOWN container
	// is stopped before it is removed.
	State        ContainerState `json:"state,omitempty"`
	PodSandboxID string         `json:"podSandboxId,omitempty"`
	Attempt      uint32         `json:"attempt"`
	Detail       string         `json:"detail,omitempty"`
}

// SandboxPlan is the sandbox collector's decision. It sees the containers
// that survive the container plan.
type SandboxPlan struct {
	Remove []SandboxRemoval `json:"remove"`
}

// SandboxRemoval is one pod sandbox the plan stops and removes.
type SandboxRemoval struct {
	ID     string `json:"id"`
	PodUID string `json:"podUID"`
	// Reason is "pod-removable" or "superseded" (an older, not-ready
	// sandbox of a pod that has a newer one).
	Reason string `json:"reason"`
	// State is the sandbox's state when planned.
	State SandboxState `json:"state,omitempty"`
}

// Sandbox removal reasons.
const (
	SandboxPodRemovable = "pod-removable"
	SandboxSuperseded   = "superseded"
)

// LogPlan is the log collector's decision. Only absolute paths inside
// PodLogsDir or ContainerLogsDir ever appear here.
type LogPlan struct {
	Remove []LogRemoval `json:"remove"`
}

// LogRemoval is one pod log directory or dangling symlink to remove.
type LogRemoval struct {
	Path string `json:"path"`
	// Reason is "pod-removable" (a pod log directory), "dangling" (a
	// /var/log/containers symlink whose container is gone or exited), or
	// "pod-dir-removed" (such a symlink into a pod log directory this
	// pass removes).
	Reason string `json:"reason"`
}

// Log removal reasons.
const (
	LogPodRemovable = "pod-removable"
	LogDangling     = "dangling"
	// LogPodDirRemoved is a /var/log/containers symlink into a pod log
	// directory the same pass removes: dangling once it has run.
	LogPodDirRemoved = "pod-dir-removed"
)

// DiskReserve is the old diskSpaceManager's verdict: a filesystem with less
// than ThresholdMiB available is out of disk and admits no new pods.
type DiskReserve struct {
	ThresholdMiB int64          `json:"thresholdMiB"`
	ImageFs      FsReserve      `json:"imageFs"`
	RootFs       *FsReserve     `json:"rootFs"`
	Eviction     []EvictionLine `json:"eviction,omitempty"`
}

// FsReserve is one filesystem's reserve check.
type FsReserve struct {
	OK             bool   `json:"ok"`
	AvailableBytes int64  `json:"availableBytes"`
	Error          string `json:"error,omitempty"`
}

// EvictionLine is one evictionHard signal resolved against a filesystem:
// the eviction manager evicts pods when available falls below the
// threshold. The amounts count bytes, or inodes for the *.inodesFree
// signals (Inodes); the JSON names them accordingly: thresholdBytes and
// availableBytes, or thresholdInodes and availableInodes.
type EvictionLine struct {
	Signal    string
	Threshold string
	// Inodes says the amounts count inodes, not bytes.
	Inodes bool
	// ThresholdAmount is the threshold resolved against the capacity.
	ThresholdAmount int64
	// Available is what the filesystem has free.
	Available int64
	Crossed   bool
}

// evictionLineJSON is EvictionLine on the wire: exactly one of each pair
// of amounts is set, named for its unit.
type evictionLineJSON struct {
	Signal          string `json:"signal"`
	Threshold       string `json:"threshold"`
	ThresholdBytes  *int64 `json:"thresholdBytes,omitempty"`
	AvailableBytes  *int64 `json:"availableBytes,omitempty"`
	ThresholdInodes *int64 `json:"thresholdInodes,omitempty"`
	AvailableInodes *int64 `json:"availableInodes,omitempty"`
	Crossed         bool   `json:"crossed"`
}

// MarshalJSON names the amounts for their unit, so that an inode count is
// never read as bytes.
func (e EvictionLine) MarshalJSON() ([]byte, error) {
	w := evictionLineJSON{Signal: e.Signal, Threshold: e.Threshold, Crossed: e.Crossed}
	t, a := e.ThresholdAmount, e.Available
	if e.Inodes {
		w.ThresholdInodes, w.AvailableInodes = &t, &a
	} else {
		w.ThresholdBytes, w.AvailableBytes = &t, &a
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *EvictionLine) UnmarshalJSON(b []byte) error {
	var w evictionLineJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = EvictionLine{Signal: w.Signal, Threshold: w.Threshold, Crossed: w.Crossed}
	e.Inodes = w.ThresholdInodes != nil || w.AvailableInodes != nil
	for _, v := range []*int64{w.ThresholdBytes, w.ThresholdInodes} {
		if v != nil {
			e.ThresholdAmount = *v
		}
	}
	for _, v := range []*int64{w.AvailableBytes, w.AvailableInodes} {
		if v != nil {
			e.Available = *v
		}
	}
	return nil
}

// Event is a kubelet-style event.
type Event struct {
	Time time.Time `json:"time,omitzero"`
	// Reason is one of the Event* constants.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Warning is true for failures.
	Warning bool `json:"warning,omitempty"`
}

// Event reasons, as the kubelet names them.
const (
	EventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	EventInvalidDiskCapacity = "InvalidDiskCapacity"
	EventImageGCFailed       = "ImageGCFailed"
	EventContainerGCFailed   = "ContainerGCFailed"
)
