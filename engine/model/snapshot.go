package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// APIVersion is the apiVersion of every document nodegc reads or writes.
const APIVersion = "nodegc/v1"

// Kinds of the JSON documents nodegc reads and writes.
const (
	KindSnapshot = "NodeSnapshot"
	KindPlan     = "GCPlan"
)

// Snapshot is everything the planners need to know about a node at one
// instant. It is the NodeSnapshot contract of docs/design.md; fields beyond the
// contract are optional and ignored by other readers.
type Snapshot struct {
	APIVersion   string        `json:"apiVersion"`
	Kind         string        `json:"kind"`
	TakenAt      time.Time     `json:"takenAt"`
	Runtime      RuntimeInfo   `json:"runtime"`
	ImageFs      FsStats       `json:"imageFs"`
	RootFs       *FsStats      `json:"rootFs,omitempty"`
	Images       []Image       `json:"images"`
	ImageRecords []ImageRecord `json:"imageRecords"`
	Sandboxes    []Sandbox     `json:"sandboxes"`
	Containers   []Container   `json:"containers"`
	PodSource    PodSource     `json:"podSource"`
	// Logs lists the log files on disk that log GC may act on. Optional: nil
	// when the logs were not scanned (a snapshot of another node, a test).
	Logs *LogFiles `json:"logs,omitempty"`
}

// RuntimeInfo names the CRI runtime a snapshot was taken from.
type RuntimeInfo struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Endpoint string `json:"endpoint"`
	// SandboxImages are the references (tags or IDs) of the sandbox ("pause")
	// images: the one the runtime's verbose status names as its configured
	// sandbox image, and those that sandboxes were seen running. They are
	// never removed, pinned or not (containerd before 1.7 does not pin them).
	SandboxImages []string `json:"sandboxImages,omitempty"`
}

// FsStats describes one filesystem. The kubelet reads the same numbers
// through cadvisor; available is what an unprivileged writer may use.
type FsStats struct {
	Mountpoint     string `json:"mountpoint"`
	CapacityBytes  int64  `json:"capacityBytes"`
	AvailableBytes int64  `json:"availableBytes"`
	UsedBytes      int64  `json:"usedBytes"`
	Inodes         int64  `json:"inodes"`
	InodesFree     int64  `json:"inodesFree"`
}

// Image is one image as the runtime lists it.
type Image struct {
	ID          string   `json:"id"`
	RepoTags    []string `json:"repoTags"`
	RepoDigests []string `json:"repoDigests"`
	SizeBytes   int64    `json:"sizeBytes"`
	Pinned      bool     `json:"pinned"`
}

// ImageRecord is what nodegc remembers about an image between passes, as the
// kubelet's imageRecord does: when it was first detected and when a pass last
// saw a container (in any state) use it. LastUsed is nil for an image never
// seen in use.
type ImageRecord struct {
	ID            string     `json:"id"`
	FirstDetected time.Time  `json:"firstDetected"`
	LastUsed      *time.Time `json:"lastUsed,omitempty"`
}

// SandboxState is a CRI pod sandbox state; the constants are the JSON values.
type SandboxState string

// Pod sandbox states.
const (
	SandboxReady    SandboxState = "SANDBOX_READY"
	SandboxNotReady SandboxState = "SANDBOX_NOTREADY"
)

// SandboxStateOther is a sandbox state the CRI API does not define (a newer
// runtime may send one), written SANDBOX_STATE_<n>. Every planner and the
// executor treat it as active: such a sandbox is never stopped or removed.
func SandboxStateOther(n int32) SandboxState {
	return SandboxState("SANDBOX_STATE_" + strconv.Itoa(int(n)))
}

// ContainerStateOther is a container state the CRI API does not define (a
// newer runtime may send one), written CONTAINER_STATE_<n>. Every planner
// and the executor treat it as active: such a container is never stopped or
// removed.
func ContainerStateOther(n int32) ContainerState {
	return ContainerState("CONTAINER_STATE_" + strconv.Itoa(int(n)))
}

// Short is the state for people, without the CRI prefix: EXITED, RUNNING,
// and UNDEFINED(7) for a state the CRI API does not define.
func (s ContainerState) Short() string { return shortStateName(string(s), "CONTAINER_") }

// Short is the state for people, without the CRI prefix: READY, NOTREADY,
// and UNDEFINED(2) for a state the CRI API does not define.
func (s SandboxState) Short() string { return shortStateName(string(s), "SANDBOX_") }

func shortStateName(s, prefix string) string {
	if otherState(s, prefix+"STATE_") {
		return "UNDEFINED(" + strings.TrimPrefix(s, prefix+"STATE_") + ")"
	}
	return strings.TrimPrefix(s, prefix)
}

// otherState reports whether s is prefix followed by a decimal number, the
// form of a state the CRI API does not define.
func otherState(s, prefix string) bool {
	n, ok := strings.CutPrefix(s, prefix)
	if !ok || n == "" || len(n) > 11 {
		return false
	}
	_, err := strconv.Atoi(n)
	return err == nil
}

// Sandbox is one pod sandbox.
type Sandbox struct {
	ID           string       `json:"id"`
	PodUID       string       `json:"podUID"`
	PodName      string       `json:"podName"`
	PodNamespace string       `json:"podNamespace"`
	Attempt      uint32       `json:"attempt"`
	State        SandboxState `json:"state"`
	CreatedAt    time.Time    `json:"createdAt"`
	// LogDirectory is the sandbox's log directory as the runtime reports it
	// (optional; may be empty or relative when another CRI client made it).
	LogDirectory string `json:"logDirectory,omitempty"`
	// ConfigSource is where the kubelet got the sandbox's pod: its
	// kubernetes.io/config.source annotation, which the kubelet sets on
	// every pod it runs and copies to the sandbox (pkg/kubelet/config
	// config.go, kuberuntime labels.go newPodAnnotations). ConfigSourceAPI
	// for a pod from the API server; "file" or "http" for a static pod,
	// which the API server cannot judge. Empty when the sandbox has none
	// (another CRI client made it, or a snapshot without it).
	ConfigSource string `json:"configSource,omitempty"`
}

// ConfigSourceAPI is the ConfigSource of a pod from the API server
// (kubetypes.ApiserverSource).
const ConfigSourceAPI = "api"

// Static reports whether the sandbox belongs to a static pod: one the
// kubelet has from a manifest file or URL, not from the API server
// (kubetypes.IsStaticPod: a config source other than "api").
func (sb Sandbox) Static() bool {
	return sb.ConfigSource != "" && sb.ConfigSource != ConfigSourceAPI
}

// ContainerState is a CRI container state; the constants are the JSON values.
type ContainerState string

// Container states.
const (
	ContainerCreated ContainerState = "CONTAINER_CREATED"
	ContainerRunning ContainerState = "CONTAINER_RUNNING"
	ContainerExited  ContainerState = "CONTAINER_EXITED"
	ContainerUnknown ContainerState = "CONTAINER_UNKNOWN"
)

// Container is one container, live or dead.
type Container struct {
	ID           string         `json:"id"`
	PodSandboxID string         `json:"podSandboxId"`
	PodUID       string         `json:"podUID"`
	Name         string         `json:"name"`
	Attempt      uint32         `json:"attempt"`
	ImageID      string         `json:"imageId"`
	ImageRef     string         `json:"imageRef"`
	State        ContainerState `json:"state"`
	CreatedAt    time.Time      `json:"createdAt"`
	FinishedAt   *time.Time     `json:"finishedAt,omitempty"`
	ExitCode     int32          `json:"exitCode"`
	// LogPath is the container's log path as the runtime reports it
	// (optional; may be empty or relative).
	LogPath string `json:"logPath,omitempty"`
}

// PodSource is the API server's view of the pods bound to this node. Without
// a ready source the engine behaves like a kubelet whose sources are not
// ready: no pod-based removal, only the limits.
type PodSource struct {
	Ready            bool     `json:"ready"`
	RemovablePodUIDs []string `json:"removablePodUIDs"`
	// Description says where the view comes from and its state, for a
	// person ("API server https://10.0.0.1:6443, node n1: synced, 42
	// pods"); optional.
	Description string `json:"description,omitempty"`
}

// Summary is the pod source's one-line state for the plan and the
// dashboard: its description, and what a snapshot without one says.
func (p PodSource) Summary() string {
	switch {
	case p.Description != "":
		return p.Description
	case p.Ready:
		return fmt.Sprintf("ready, %d removable pods", len(p.RemovablePodUIDs))
	}
	return "none (limits only)"
}

// PodUIDs returns, sorted, the UIDs of the pods the snapshot holds
// something of: sandboxes, containers and pod log directories. They are
// the pods a pod source must judge.
func (s Snapshot) PodUIDs() []string {
	seen := make(map[string]bool)
	var uids []string
	add := func(uid string) {
		if uid != "" && !seen[uid] {
			seen[uid] = true
			uids = append(uids, uid)
		}
	}
	for _, sb := range s.Sandboxes {
		add(sb.PodUID)
	}
	for _, c := range s.Containers {
		add(c.PodUID)
	}
	if s.Logs != nil {
		for _, d := range s.Logs.PodDirs {
			add(PodUIDFromLogDir(d))
		}
	}
	slices.Sort(uids)
	return uids
}

// LogFiles is what log GC sees on disk.
type LogFiles struct {
	// PodLogsDir is the kubelet's podLogsDir (default /var/log/pods).
	PodLogsDir string `json:"podLogsDir"`
	// PodDirs are the names (not paths) of the directories in PodLogsDir,
	// each <namespace>_<name>_<uid>.
	PodDirs []string `json:"podDirs"`
	// ContainerLogsDir is the directory of the symlinks; "" means
	// /var/log/containers.
	ContainerLogsDir string `json:"containerLogsDir,omitempty"`
	// ContainerLinks are the symlinks in ContainerLogsDir.
	ContainerLinks []LogLink `json:"containerLinks"`
}

// LogLink is one /var/log/containers/*.log symlink. Its name ends in
// -<container id>.log, which is how log GC ties it to a container.
type LogLink struct {
	Path        string `json:"path"`
	Target      string `json:"target"`
	ContainerID string `json:"containerId"`
	// Dangling is true when the link's target does not exist. Only
	// dangling links are ever removed (the kubelet's rule); a snapshot
	// that does not say is taken as not dangling.
	Dangling bool `json:"dangling,omitempty"`
}

// PodUIDFromLogDir is the kubelet's parsePodUIDFromLogsDirectory: the
// last "_"-separated part of <namespace>_<name>_<uid>. A name that is not
// a plain directory name gives "".
func PodUIDFromLogDir(name string) string {
	parts := strings.Split(name, "_")
	if len(parts) < 3 {
		return ""
	}
	return parts[len(parts)-1]
}
