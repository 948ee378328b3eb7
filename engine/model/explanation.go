package model

import "time"

// Explanation is a plan told row by row, for a person: every image in
// eviction order with its rank, what the plan does with it and why, the
// cut line, every dead container grouped by pod, and the sandboxes and
// log paths the plan removes. The CLI table, `nodegc plan -o json` and
// the dashboard all render these rows; none of them decides anything
// about the plan on its own (which containers use an image, which image
// is the sandbox image, the order, the cut line): the engine does, here.
type Explanation struct {
	// Images is every image of the snapshot (and any removal the snapshot
	// lacks) in eviction order: the plan's order, then the images it did
	// not rank in the kubelet's LRU order.
	Images []ImageRow `json:"images"`
	// Cut is where the cut line falls among Images.
	Cut CutLine `json:"cutLine"`
	// Containers is every container that is not running, grouped by pod
	// name and container name, newest first (see ContainerRow).
	Containers []ContainerRow `json:"containers"`
	// Sandboxes is the sandboxes the plan removes, in execution order.
	Sandboxes []SandboxRow `json:"sandboxes"`
	// Logs is the log paths the plan removes, in execution order.
	Logs []LogRow `json:"logs"`
}

// Action is what a plan does with an item; the constants are the JSON
// values.
type Action string

// Actions.
const (
	ActionRemove Action = "remove"
	ActionKeep   Action = "keep"
)

// ImageRow is one image as a plan explains it.
type ImageRow struct {
	// Rank is the image's place in eviction order, from 1.
	Rank int `json:"rank"`
	// Image is the image as listed (for a removal the snapshot lacks,
	// what the plan recorded of it).
	Image Image `json:"image"`
	// Name is the image's display name (format.ImageName).
	Name   string `json:"name"`
	Action Action `json:"action"`
	// Step is the removal's place in execution order, from 1; 0 for a
	// kept image.
	Step int `json:"step,omitempty"`
	// Reason is an ImageRemoveReason or an ImageKeepReason.
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	// FirstDetected is nil when the image has no record yet: the planner
	// takes it as first detected at the evaluation time.
	FirstDetected *time.Time `json:"firstDetected,omitempty"`
	// LastUsed is nil for an image never used.
	LastUsed *time.Time `json:"lastUsed,omitempty"`
	// EligibleAt is when a too-young image becomes eligible.
	EligibleAt *time.Time `json:"eligibleAt,omitempty"`
	// UsedBy names the containers using the image ("ns/pod/container"),
	// by the rule of ImagesInUse.
	UsedBy []string `json:"usedBy,omitempty"`
	// SandboxImage reports whether the image is a sandbox image
	// (IsSandboxImage over the runtime's sandbox images).
	SandboxImage bool `json:"sandboxImage,omitempty"`
}

// CutLine is where the image space pass stops, and what the line reads.
type CutLine struct {
	// Row is how many rows of Explanation.Images are above the line; -1
	// when the plan has no image part (a containers pass).
	Row int `json:"row"`
	// Text is the line's wording, e.g. "cut line: removals above free
	// 11.0 GiB of 10.0 GiB to free".
	Text string `json:"text"`
	// BytesAbove is what the removals above the line free.
	BytesAbove int64 `json:"bytesAbove"`
}

// ContainerRow is one container that is not running, as a plan explains
// it.
type ContainerRow struct {
	// Pod names the pod: "namespace/name" from its sandbox (the
	// container's own, else any of the pod's), else "pod <uid>".
	Pod string `json:"pod"`
	// Rank is the container's place among the dead containers of its pod
	// and name, newest first, from 1: the kubelet keeps the lowest ranks.
	Rank       int            `json:"rank"`
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Attempt    uint32         `json:"attempt"`
	State      ContainerState `json:"state"`
	CreatedAt  time.Time      `json:"createdAt,omitzero"`
	FinishedAt *time.Time     `json:"finishedAt,omitempty"`
	Action     Action         `json:"action"`
	// Step is the removal's place in execution order, from 1; 0 when kept.
	Step int `json:"step,omitempty"`
	// Reason is the ContainerRemoveReason of a removal, or the
	// ContainerKeepReason of a kept container.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// ContainerKeepReason says why a dead container stays.
type ContainerKeepReason string

// Why a dead container stays, as the planner decides it
// (planContainerGC).
const (
	// ContainerKeepNotPlanned: the pass runs no container GC.
	ContainerKeepNotPlanned ContainerKeepReason = "not-planned"
	// ContainerKeepActive: a state the CRI API does not define, which
	// nodegc treats as active.
	ContainerKeepActive ContainerKeepReason = "active"
	// ContainerKeepTooYoung: created less than the minimum age ago.
	ContainerKeepTooYoung ContainerKeepReason = "too-young"
	// ContainerKeepNewest: among the newest its pod and name keep (the
	// per-container limit, or its share of the node limit).
	ContainerKeepNewest ContainerKeepReason = "newest"
)

// SandboxRow is one sandbox the plan stops and removes.
type SandboxRow struct {
	// Step is the removal's place in execution order, from 1.
	Step   int          `json:"step"`
	ID     string       `json:"id"`
	Pod    string       `json:"pod"`
	State  SandboxState `json:"state,omitempty"`
	Action Action       `json:"action"`
	Reason string       `json:"reason"`
}

// LogRow is one log path the plan removes.
type LogRow struct {
	Step   int    `json:"step"`
	Path   string `json:"path"`
	Action Action `json:"action"`
	Reason string `json:"reason"`
}
