// Package nodetest holds the snapshots, records and containers that the
// engine's tests build nodes from, shared by the tests of its rooms.
package nodetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// T0 is the evaluation time of every planner test.
var T0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// Ago is T0 minus d.
func Ago(d time.Duration) time.Time { return T0.Add(-d) }

// At returns a pointer to T0 minus d, for ImageRecord.LastUsed.
func At(d time.Duration) *time.Time {
	t := Ago(d)
	return &t
}

// BaseSnapshot is a valid snapshot at T0 with a 1000-byte image fs that is
// half full.
func BaseSnapshot() model.Snapshot {
	return model.Snapshot{
		APIVersion: model.APIVersion,
		Kind:       model.KindSnapshot,
		TakenAt:    T0,
		Runtime:    model.RuntimeInfo{Name: "containerd", Version: "1.7.24"},
		ImageFs:    model.FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: 1000, AvailableBytes: 500},
	}
}

// Fs is an image fs of the capacity and available bytes.
func Fs(capacity, available int64) model.FsStats {
	return model.FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: capacity, AvailableBytes: available}
}

// Old is a record first detected a day ago and never used.
func Old(id string) model.ImageRecord {
	return model.ImageRecord{ID: id, FirstDetected: Ago(24 * time.Hour)}
}

// Used is a record first detected a day ago and last used d ago.
func Used(id string, d time.Duration) model.ImageRecord {
	return model.ImageRecord{ID: id, FirstDetected: Ago(24 * time.Hour), LastUsed: At(d)}
}

// Dead is an exited container of the pod, created d ago.
func Dead(id, pod, name string, attempt uint32, d time.Duration) model.Container {
	return model.Container{ID: id, PodSandboxID: "sb-" + pod, PodUID: pod, Name: name, Attempt: attempt,
		ImageID: "sha256:app", State: model.ContainerExited, CreatedAt: Ago(d)}
}

// imageIDs lists the IDs and reasons of image removals as "id:reason".
func ImageRemovals(p model.ImagePlan) []string {
	out := []string{}
	for _, r := range p.Remove {
		out = append(out, fmt.Sprintf("%s:%s", r.ID, r.Reason))
	}
	return out
}

// ImageKeeps maps kept image IDs to their reasons.
func ImageKeeps(p model.ImagePlan) map[string]model.ImageKeepReason {
	out := map[string]model.ImageKeepReason{}
	for _, k := range p.Keep {
		out[k.ID] = k.Reason
	}
	return out
}

// ContainerRemovals lists container removals as "id:reason".
func ContainerRemovals(p model.ContainerPlan) []string {
	out := []string{}
	for _, r := range p.Remove {
		out = append(out, fmt.Sprintf("%s:%s", r.ID, r.Reason))
	}
	return out
}

// SandboxRemovals lists sandbox removals as "id:reason".
func SandboxRemovals(p model.SandboxPlan) []string {
	out := []string{}
	for _, r := range p.Remove {
		out = append(out, fmt.Sprintf("%s:%s", r.ID, r.Reason))
	}
	return out
}

// LogRemovals lists log removals as "path:reason".
func LogRemovals(p model.LogPlan) []string {
	out := []string{}
	for _, r := range p.Remove {
		out = append(out, fmt.Sprintf("%s:%s", r.Path, r.Reason))
	}
	return out
}

// EventReasons lists the events' reasons, comma-separated.
func EventReasons(evs []model.Event) string {
	rs := []string{}
	for _, e := range evs {
		rs = append(rs, e.Reason)
	}
	return strings.Join(rs, ",")
}

// RandomSnapshot generates a snapshot at T0 that stresses the planners:
// shared tags, records in the future, containers in every state (and one
// the contract does not name), duplicate-free IDs, odd filesystems and
// hostile log paths.
func RandomSnapshot(r *rand.Rand) model.Snapshot {
	s := BaseSnapshot()
	pick := func(xs ...int64) int64 { return xs[r.IntN(len(xs))] }
	s.ImageFs = model.FsStats{
		CapacityBytes:  pick(0, -1, 1000, 1<<40, r.Int64N(1<<20)+1),
		AvailableBytes: pick(0, -5, 500, 1<<41, r.Int64N(1<<20)),
		Inodes:         pick(0, 1000), InodesFree: pick(0, 10, 900),
	}
	if r.IntN(2) == 0 {
		s.RootFs = &model.FsStats{CapacityBytes: pick(0, 1<<30), AvailableBytes: pick(-1, 1<<20, 1<<29)}
	}

	tags := []string{"app:1", "app:2", "pause:3.9", "db:5", "cache:7"}
	nImages := r.IntN(25)
	var refs []string
	for i := range nImages {
		img := model.Image{ID: fmt.Sprintf("sha256:%02d", i), SizeBytes: r.Int64N(300)}
		if r.IntN(2) == 0 {
			img.RepoTags = []string{tags[r.IntN(len(tags))]}
		}
		if r.IntN(3) == 0 {
			img.RepoDigests = []string{fmt.Sprintf("repo@sha256:d%d", r.IntN(8))}
		}
		img.Pinned = r.IntN(10) == 0
		s.Images = append(s.Images, img)
		refs = append(refs, img.ID)
		refs = append(refs, img.RepoTags...)
		refs = append(refs, img.RepoDigests...)
		if r.IntN(4) != 0 {
			rec := model.ImageRecord{ID: img.ID, FirstDetected: randomTime(r)}
			if r.IntN(2) == 0 {
				lu := rec.FirstDetected.Add(time.Duration(r.Int64N(int64(2 * time.Hour))))
				rec.LastUsed = &lu
			}
			s.ImageRecords = append(s.ImageRecords, rec)
		}
	}
	refs = append(refs, "gone:latest", "sha256:unknown", "")
	if r.IntN(2) == 0 {
		s.Runtime.SandboxImages = []string{refs[r.IntN(len(refs))]}
	}

	nPods := r.IntN(8)
	pods := make([]string, nPods)
	podSandboxes := make([][]string, nPods)
	for i := range nPods {
		pods[i] = fmt.Sprintf("uid-%d", i)
		for j := range r.IntN(4) {
			id := fmt.Sprintf("sb-%d-%d", i, j)
			st := model.SandboxNotReady
			if r.IntN(3) == 0 {
				st = model.SandboxReady
			}
			s.Sandboxes = append(s.Sandboxes, model.Sandbox{ID: id, PodUID: pods[i], PodName: fmt.Sprintf("pod-%d", i), PodNamespace: "ns",
				Attempt: uint32(j), State: st, CreatedAt: randomTime(r)})
			podSandboxes[i] = append(podSandboxes[i], id)
		}
	}
	randomContainers(r, &s, pods, podSandboxes, refs)

	randomPodSourceAndLogs(r, &s, pods)
	return s
}

// randomContainers adds up to 40 containers in random states to s, each
// in one of the pods and its sandboxes, using one of the image refs.
func randomContainers(r *rand.Rand, s *model.Snapshot, pods []string, podSandboxes [][]string, refs []string) {
	nPods := len(pods)
	states := []model.ContainerState{model.ContainerCreated, model.ContainerRunning, model.ContainerExited, model.ContainerExited, model.ContainerUnknown, "CONTAINER_PAUSED"}
	for i := range r.IntN(40) {
		c := model.Container{ID: fmt.Sprintf("c-%02d", i), Name: []string{"a", "b", "c"}[r.IntN(3)], Attempt: uint32(r.IntN(4)),
			State: states[r.IntN(len(states))], CreatedAt: randomTime(r)}
		if nPods > 0 {
			pi := r.IntN(nPods)
			c.PodUID = pods[pi]
			if len(podSandboxes[pi]) > 0 {
				c.PodSandboxID = podSandboxes[pi][r.IntN(len(podSandboxes[pi]))]
			}
		}
		if len(refs) > 0 {
			c.ImageID = refs[r.IntN(len(refs))]
			if r.IntN(3) == 0 {
				c.ImageRef = refs[r.IntN(len(refs))]
			}
		}
		s.Containers = append(s.Containers, c)
	}
}

// randomTime is mostly in the ten hours before T0, sometimes a little
// after it.
func randomTime(r *rand.Rand) time.Time {
	return T0.Add(time.Duration(r.Int64N(int64(10*time.Hour+time.Minute))) - 10*time.Hour)
}

// randomPodSourceAndLogs gives s a random pod source over its pods and,
// two times in three, log files whose names a hostile user could choose.
func randomPodSourceAndLogs(r *rand.Rand, s *model.Snapshot, pods []string) {
	s.PodSource.Ready = r.IntN(2) == 0
	for _, p := range pods {
		if r.IntN(2) == 0 {
			s.PodSource.RemovablePodUIDs = append(s.PodSource.RemovablePodUIDs, p)
		}
	}
	if r.IntN(3) != 0 {
		s.Logs = &model.LogFiles{PodLogsDir: []string{"/var/log/pods", "", "/var/log/pods/", "../pods", "/"}[r.IntN(5)]}
		hostile := []string{"", ".", "..", "../x_y_%s", "a/../../b_c_%s", "/etc_x_%s", "ns_pod_%s", "ns_pod_%s", "x\x00_y_%s"}
		for _, p := range pods {
			h := hostile[r.IntN(len(hostile))]
			if strings.Contains(h, "%s") {
				h = fmt.Sprintf(h, p)
			}
			s.Logs.PodDirs = append(s.Logs.PodDirs, h)
		}
		links := []string{"/var/log/containers/p_ns_a-%s.log", "p_ns_a-%s.log", "/var/log/containers/../../etc/%s.log",
			"/var/log/containers/sub/%s.log", "/var/log/containers", ""}
		for i := range r.IntN(6) {
			id := fmt.Sprintf("c-%02d", r.IntN(45))
			l := links[r.IntN(len(links))]
			if strings.Contains(l, "%s") {
				l = fmt.Sprintf(l, id)
			}
			if i%2 == 0 {
				id = ""
			}
			s.Logs.ContainerLinks = append(s.Logs.ContainerLinks, model.LogLink{Path: l, ContainerID: id})
		}
	}
}

// ValidSnapshotJSON is a small snapshot that follows the contract, with an
// unknown field to prove those are ignored.
const ValidSnapshotJSON = `{
  "apiVersion": "nodegc/v1", "kind": "NodeSnapshot",
  "takenAt": "2025-03-01T12:00:00Z",
  "futureField": {"ignored": true},
  "runtime": {"name": "containerd", "version": "1.7.24", "endpoint": "unix:///run/containerd/containerd.sock", "sandboxImages": ["registry.k8s.io/pause:3.9"]},
  "imageFs": {"mountpoint": "/var/lib/containerd", "capacityBytes": 1000, "availableBytes": 0, "usedBytes": 1000, "inodes": 10, "inodesFree": 5},
  "images": [
    {"id": "sha256:a", "repoTags": ["a:1"], "repoDigests": [], "sizeBytes": 100, "pinned": false},
    {"id": "sha256:b", "repoTags": null, "sizeBytes": 50, "pinned": true}
  ],
  "imageRecords": [{"id": "sha256:a", "firstDetected": "2025-03-01T10:00:00Z", "lastUsed": "2025-03-01T11:00:00.5Z"}],
  "sandboxes": [{"id": "sb1", "podUID": "u1", "podName": "web", "podNamespace": "shop", "attempt": 0, "state": "SANDBOX_NOTREADY", "createdAt": "2025-03-01T09:00:00Z"}],
  "containers": [{"id": "c1", "podSandboxId": "sb1", "podUID": "u1", "name": "web", "attempt": 2,
                  "imageId": "sha256:a", "imageRef": "a:1", "state": "CONTAINER_EXITED",
                  "createdAt": "2025-03-01T09:00:00Z", "finishedAt": "2025-03-01T09:30:00Z", "exitCode": 137}],
  "podSource": {"ready": true, "removablePodUIDs": ["u9"]}
}`

// BigSnapshot is a large node: 10,000 images (half of them used), 20,000
// pods each with a sandbox, and 100,000 dead containers (five per pod, in
// two container names), with the image fs 95% full, a ready pod source
// listing a tenth of the pods as removable, and a node limit, so that
// every step of every planner does real work.
var BigSnapshot = sync.OnceValues(func() (model.Snapshot, []byte) {
	const (
		nImages     = 10_000
		nPods       = 20_000
		perPod      = 5
		capacityGiB = 500
	)
	s := BaseSnapshot()
	s.ImageFs = model.FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: capacityGiB << 30, AvailableBytes: capacityGiB << 30 / 20}
	s.Runtime.SandboxImages = []string{"registry.k8s.io/pause:3.9"}
	for i := range nImages {
		id := fmt.Sprintf("sha256:%064x", i)
		s.Images = append(s.Images, model.Image{
			ID: id, RepoTags: []string{fmt.Sprintf("registry.example.com/team/app-%d:v%d", i, i%7)},
			RepoDigests: []string{fmt.Sprintf("registry.example.com/team/app-%d@sha256:%064x", i, i+1<<40)},
			SizeBytes:   int64(50+i%400) << 20,
		})
		rec := model.ImageRecord{ID: id, FirstDetected: T0.Add(-time.Duration(i+100) * time.Minute)}
		if i%3 != 0 {
			lu := T0.Add(-time.Duration(i%5000) * time.Second)
			rec.LastUsed = &lu
		}
		s.ImageRecords = append(s.ImageRecords, rec)
	}
	s.Images[0].RepoTags = []string{"registry.k8s.io/pause:3.9"}
	for p := range nPods {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", p, p)
		sb := fmt.Sprintf("%064x", p+1<<50)
		s.Sandboxes = append(s.Sandboxes, model.Sandbox{ID: sb, PodUID: uid, PodName: fmt.Sprintf("pod-%d", p), PodNamespace: "ns",
			State: model.SandboxNotReady, CreatedAt: T0.Add(-time.Duration(p) * time.Second)})
		if p%10 == 0 {
			s.PodSource.RemovablePodUIDs = append(s.PodSource.RemovablePodUIDs, uid)
		}
		for k := range perPod {
			img := s.Images[(p*perPod+k)%(nImages/2)]
			s.Containers = append(s.Containers, model.Container{
				ID: fmt.Sprintf("%064x", p*perPod+k+1<<55), PodSandboxID: sb, PodUID: uid, Name: fmt.Sprintf("c%d", k%2),
				Attempt: uint32(k), ImageID: img.ID, ImageRef: img.RepoDigests[0], State: model.ContainerExited,
				CreatedAt: T0.Add(-time.Duration(p*perPod+k) * time.Second),
			})
		}
	}
	s.PodSource.Ready = true
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return s, data
})

// BenchPolicy is the kubelet's defaults with a node limit and a MaxAge,
// so that BigSnapshot's plan runs every step.
func BenchPolicy() model.Policy {
	p := model.DefaultPolicy()
	p.Container.MaxContainers = 30_000
	p.Image.MaxAge = 24 * time.Hour
	return p
}
