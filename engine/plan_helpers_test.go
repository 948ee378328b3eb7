package engine

import (
	"fmt"
	"strings"
	"time"
)

// t0 is the evaluation time of every planner test.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// ago is t0 minus d.
func ago(d time.Duration) time.Time { return t0.Add(-d) }

// at returns a pointer to t0 minus d, for ImageRecord.LastUsed.
func at(d time.Duration) *time.Time {
	t := ago(d)
	return &t
}

// baseSnapshot is a valid snapshot at t0 with a 1000-byte image fs that is
// half full.
func baseSnapshot() Snapshot {
	return Snapshot{
		APIVersion: APIVersion,
		Kind:       KindSnapshot,
		TakenAt:    t0,
		Runtime:    RuntimeInfo{Name: "containerd", Version: "1.7.24"},
		ImageFs:    FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: 1000, AvailableBytes: 500},
	}
}

// fs is an image fs of the capacity and available bytes.
func fs(capacity, available int64) FsStats {
	return FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: capacity, AvailableBytes: available}
}

// old is a record first detected a day ago and never used.
func old(id string) ImageRecord { return ImageRecord{ID: id, FirstDetected: ago(24 * time.Hour)} }

// used is a record first detected a day ago and last used d ago.
func used(id string, d time.Duration) ImageRecord {
	return ImageRecord{ID: id, FirstDetected: ago(24 * time.Hour), LastUsed: at(d)}
}

// dead is an exited container of the pod, created d ago.
func dead(id, pod, name string, attempt uint32, d time.Duration) Container {
	return Container{ID: id, PodSandboxID: "sb-" + pod, PodUID: pod, Name: name, Attempt: attempt,
		ImageID: "sha256:app", State: ContainerExited, CreatedAt: ago(d)}
}

// imageIDs lists the IDs and reasons of image removals as "id:reason".
func imageRemovals(p ImagePlan) []string {
	out := []string{}
	for _, r := range p.Remove {
		out = append(out, fmt.Sprintf("%s:%s", r.ID, r.Reason))
	}
	return out
}

// imageKeeps maps kept image IDs to their reasons.
func imageKeeps(p ImagePlan) map[string]ImageKeepReason {
	out := map[string]ImageKeepReason{}
	for _, k := range p.Keep {
		out[k.ID] = k.Reason
	}
	return out
}

// containerRemovals lists container removals as "id:reason".
func containerRemovals(p ContainerPlan) []string {
	out := []string{}
	for _, r := range p.Remove {
		out = append(out, fmt.Sprintf("%s:%s", r.ID, r.Reason))
	}
	return out
}

// sandboxRemovals lists sandbox removals as "id:reason".
func sandboxRemovals(p SandboxPlan) []string {
	out := []string{}
	for _, r := range p.Remove {
		out = append(out, fmt.Sprintf("%s:%s", r.ID, r.Reason))
	}
	return out
}

// logRemovals lists log removals as "path:reason".
func logRemovals(p LogPlan) []string {
	out := []string{}
	for _, r := range p.Remove {
		out = append(out, fmt.Sprintf("%s:%s", r.Path, r.Reason))
	}
	return out
}

func eventReasons(evs []Event) string {
	rs := []string{}
	for _, e := range evs {
		rs = append(rs, e.Reason)
	}
	return strings.Join(rs, ",")
}
