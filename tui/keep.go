// Keeping the shown plan across a re-list that found the node as shown:
// the event stream's safety net lists the node every SafetyInterval (or
// StreamSafetyInterval), and
// on an idle node that listing reads exactly as the last one. Planning it
// again would give the same plan, so the re-list costs the listing and a
// comparison, not a plan and the panes' rows.

package tui

import (
	"slices"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// shown is what a keeping re-list compares its listing with: the snapshot
// on screen and the plan made from it. Both are only read.
type shown struct {
	snap engine.Snapshot
	plan engine.Plan
}

// keepable reports whether plan, made from old, is the plan of the
// listing cur at at: cur reads as old does (sameListing) and no decision
// of the plan moves between the plan's evaluation and at (engine.TimeStable).
// cfg is the configured policy: while it has a MaxAge, the engine's
// effective policy may still turn it on, and idle times are spelled out
// in removals' details, so such a plan is never kept.
func keepable(old engine.Snapshot, plan engine.Plan, cfg engine.Policy, cur engine.Snapshot, at time.Time) bool {
	return cfg.Image.MaxAge == 0 && !at.Before(plan.EvaluatedAt) &&
		engine.TimeStable(cur, plan, at) && sameListing(old, cur)
}

// sameListing reports whether cur holds what old holds, but for when it
// was taken and the last-used times the listing itself stamps on the
// images in use (an image in use is last used at each listing, which
// moves no decision: every one in use is kept). The digest goes first:
// it tells most changes apart without walking the lists again.
func sameListing(old, cur engine.Snapshot) bool {
	if Digest(old) != Digest(cur) || len(old.ImageRecords) != len(cur.ImageRecords) {
		return false
	}
	for i, a := range old.ImageRecords {
		b := cur.ImageRecords[i]
		if a.ID != b.ID || !a.FirstDetected.Equal(b.FirstDetected) || !sameUse(a.LastUsed, b.LastUsed, old.TakenAt, cur.TakenAt) {
			return false
		}
	}
	return old.APIVersion == cur.APIVersion && old.Kind == cur.Kind &&
		sameRuntime(old.Runtime, cur.Runtime) && old.ImageFs == cur.ImageFs &&
		samePtr(old.RootFs, cur.RootFs, func(a, b engine.FsStats) bool { return a == b }) &&
		slices.EqualFunc(old.Images, cur.Images, sameImage) &&
		slices.Equal(old.Sandboxes, cur.Sandboxes) &&
		slices.EqualFunc(old.Containers, cur.Containers, sameContainer) &&
		samePods(old.PodSource, cur.PodSource) &&
		samePtr(old.Logs, cur.Logs, sameLogs)
}

// The comparisons below compare every field and allocate nothing
// (reflect.DeepEqual of a large node's listing allocated 1.5 MB). A
// struct that == compares whole (Sandbox, LogLink, FsStats) is compared
// so; one with a pointer has it compared first and cleared; one with
// slices is compared field by field, and a conversion to a copy of its
// fields (the *Fields types) stops the build when a field is added there
// without its comparison.

type (
	runtimeFields struct {
		Name, Version, Endpoint string
		SandboxImages           []string
	}
	imageFields struct {
		ID                    string
		RepoTags, RepoDigests []string
		SizeBytes             int64
		Pinned                bool
	}
	podFields struct {
		Ready            bool
		RemovablePodUIDs []string
		Description      string
	}
	logFields struct {
		PodLogsDir       string
		PodDirs          []string
		ContainerLogsDir string
		ContainerLinks   []engine.LogLink
	}
)

var (
	_ = runtimeFields(engine.RuntimeInfo{})
	_ = imageFields(engine.Image{})
	_ = podFields(engine.PodSource{})
	_ = logFields(engine.LogFiles{})
)

func sameRuntime(a, b engine.RuntimeInfo) bool {
	return a.Name == b.Name && a.Version == b.Version && a.Endpoint == b.Endpoint &&
		slices.Equal(a.SandboxImages, b.SandboxImages)
}

func sameImage(a, b engine.Image) bool {
	return a.ID == b.ID && a.SizeBytes == b.SizeBytes && a.Pinned == b.Pinned &&
		slices.Equal(a.RepoTags, b.RepoTags) && slices.Equal(a.RepoDigests, b.RepoDigests)
}

func sameContainer(a, b engine.Container) bool {
	if !samePtr(a.FinishedAt, b.FinishedAt, time.Time.Equal) || !a.CreatedAt.Equal(b.CreatedAt) {
		return false
	}
	a.FinishedAt, b.FinishedAt = nil, nil
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return a == b
}

func samePods(a, b engine.PodSource) bool {
	return a.Ready == b.Ready && a.Description == b.Description && slices.Equal(a.RemovablePodUIDs, b.RemovablePodUIDs)
}

func sameLogs(a, b engine.LogFiles) bool {
	return a.PodLogsDir == b.PodLogsDir && a.ContainerLogsDir == b.ContainerLogsDir &&
		slices.Equal(a.PodDirs, b.PodDirs) && slices.Equal(a.ContainerLinks, b.ContainerLinks)
}

// samePtr compares two optional values: both absent, or both there and
// the same by eq.
func samePtr[T any](a, b *T, eq func(T, T) bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return eq(*a, *b)
}

// sameUse compares two records' last-used times: equal, or each the time
// of its own listing (in use at both).
func sameUse(a, b *time.Time, atA, atB time.Time) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case a.Equal(*b):
		return true
	}
	return a.Equal(atA) && b.Equal(atB)
}
