package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
)

// passSnapshot is a small node: pod "old" has two dead instances of "web"
// (each in its own, not-ready sandbox), pod "live" runs, pod "gone" is
// removable, and the image fs is 95% full.
func passSnapshot() Snapshot {
	s := nodetest.BaseSnapshot()
	s.ImageFs = nodetest.Fs(1000, 50)
	s.Images = []Image{
		{ID: "sha256:app", SizeBytes: 100},
		{ID: "sha256:unused", SizeBytes: 100},
		{ID: "sha256:pause", RepoTags: []string{"registry.k8s.io/pause:3.9"}, SizeBytes: 1},
	}
	s.ImageRecords = []ImageRecord{nodetest.Old("sha256:app"), nodetest.Old("sha256:unused"), nodetest.Old("sha256:pause")}
	s.Runtime.SandboxImages = []string{"registry.k8s.io/pause:3.9"}
	s.Sandboxes = []Sandbox{
		{ID: "sb-old-0", PodUID: "old", PodName: "web-0", PodNamespace: "shop", Attempt: 0, State: SandboxNotReady, CreatedAt: nodetest.Ago(3 * time.Hour)},
		{ID: "sb-old-1", PodUID: "old", PodName: "web-0", PodNamespace: "shop", Attempt: 1, State: SandboxReady, CreatedAt: nodetest.Ago(2 * time.Hour)},
		{ID: "sb-gone", PodUID: "gone", PodName: "job-1", PodNamespace: "batch", State: SandboxNotReady, CreatedAt: nodetest.Ago(5 * time.Hour)},
		{ID: "sb-term", PodUID: "term", PodName: "done-1", PodNamespace: "batch", State: SandboxNotReady, CreatedAt: nodetest.Ago(5 * time.Hour)},
	}
	s.Containers = []Container{
		{ID: "web-0", PodSandboxID: "sb-old-0", PodUID: "old", Name: "web", Attempt: 0, ImageID: "sha256:app", State: ContainerExited, CreatedAt: nodetest.Ago(3 * time.Hour)},
		{ID: "web-1", PodSandboxID: "sb-old-1", PodUID: "old", Name: "web", Attempt: 1, ImageID: "sha256:app", State: ContainerExited, CreatedAt: nodetest.Ago(2 * time.Hour)},
		{ID: "web-2", PodSandboxID: "sb-old-1", PodUID: "old", Name: "web", Attempt: 2, ImageID: "sha256:app", State: ContainerRunning, CreatedAt: nodetest.Ago(time.Hour)},
		{ID: "job", PodSandboxID: "sb-gone", PodUID: "gone", Name: "job", ImageID: "sha256:app", State: ContainerExited, CreatedAt: nodetest.Ago(5 * time.Hour)},
		{ID: "done", PodSandboxID: "sb-term", PodUID: "term", Name: "done", ImageID: "sha256:app", State: ContainerExited, CreatedAt: nodetest.Ago(5 * time.Hour)},
	}
	s.PodSource = PodSource{Ready: true, RemovablePodUIDs: []string{"gone"}}
	s.Logs = &LogFiles{
		PodLogsDir: "/var/log/pods",
		PodDirs:    []string{"batch_job-1_gone", "batch_done-1_term", "shop_web-0_old"},
		ContainerLinks: []LogLink{
			{Path: "/var/log/containers/job-1_batch_job-job.log", ContainerID: "job", Dangling: true},
			{Path: "/var/log/containers/web-0_shop_web-web-2.log", ContainerID: "web-2", Dangling: true},
		},
	}
	return s
}

func TestPlanPass(t *testing.T) {
	p := DefaultPolicy()
	s := passSnapshot()

	t.Run("the plan carries its header, pass and policy", func(t *testing.T) {
		got := PlanPass(s, p, PassImages, nodetest.T0)
		if got.APIVersion != APIVersion || got.Kind != KindPlan || !got.EvaluatedAt.Equal(nodetest.T0) || got.Pass != PassImages || !reflect.DeepEqual(got.Policy, p) {
			t.Errorf("header = %s %s %s %s %+v", got.APIVersion, got.Kind, got.EvaluatedAt, got.Pass, got.Policy)
		}
	})

	for _, kind := range []PassKind{PassImages, PassContainers, PassFull, PassReclaimAll, "bogus"} {
		t.Run("every list of a "+string(kind)+" plan is JSON [] rather than null", func(t *testing.T) {
			for _, snap := range []Snapshot{nodetest.BaseSnapshot(), s} {
				b, err := json.Marshal(PlanPass(snap, p, kind, nodetest.T0))
				if err != nil {
					t.Fatal(err)
				}
				for _, key := range []string{`"remove":null`, `"keep":null`, `"events":null`} {
					if strings.Contains(string(b), key) {
						t.Errorf("plan JSON contains %s: %s", key, b)
					}
				}
			}
		})
	}

	t.Run("an image pass plans images and the disk reserve only", func(t *testing.T) {
		got := PlanPass(s, p, PassImages, nodetest.T0)
		if len(got.ContainerGC.Remove)+len(got.SandboxGC.Remove)+len(got.LogGC.Remove) != 0 {
			t.Errorf("image pass planned containers, sandboxes or logs: %+v", got)
		}
		if r := nodetest.ImageRemovals(got.ImageGC); !reflect.DeepEqual(r, []string{"sha256:unused:space"}) {
			t.Errorf("images = %v", r)
		}
		if got.DiskReserve.ThresholdMiB != DefaultLowDiskSpaceThresholdMiB || len(got.DiskReserve.Eviction) == 0 {
			t.Errorf("disk reserve = %+v", got.DiskReserve)
		}
	})

	t.Run("a container pass plans containers, then sandboxes only the survivors leave, then logs", func(t *testing.T) {
		got := PlanPass(s, p, PassContainers, nodetest.T0)
		if r := nodetest.ContainerRemovals(got.ContainerGC); !reflect.DeepEqual(r, []string{"job:pod-removable", "web-0:per-container-limit"}) {
			t.Errorf("containers = %v", r)
		}
		// sb-old-0 was referenced only by web-0, which the container
		// plan removes; sb-gone only by job.
		if r := nodetest.SandboxRemovals(got.SandboxGC); !reflect.DeepEqual(r, []string{"sb-gone:pod-removable", "sb-old-0:superseded"}) {
			t.Errorf("sandboxes = %v", r)
		}
		want := []string{"/var/log/pods/batch_job-1_gone:pod-removable", "/var/log/containers/job-1_batch_job-job.log:dangling"}
		if r := nodetest.LogRemovals(got.LogGC); !reflect.DeepEqual(r, want) {
			t.Errorf("logs = %v, want %v", r, want)
		}
		if len(got.ImageGC.Remove)+len(got.ImageGC.Keep) != 0 {
			t.Errorf("container pass planned images: %+v", got.ImageGC)
		}
	})

	t.Run("a full pass keeps images used by containers the container plan removes", func(t *testing.T) {
		got := PlanPass(s, p, PassFull, nodetest.T0)
		if len(got.ContainerGC.Remove) != 2 {
			t.Errorf("containers = %v", nodetest.ContainerRemovals(got.ContainerGC))
		}
		if k := nodetest.ImageKeeps(got.ImageGC)["sha256:app"]; k != KeepInUse {
			t.Errorf("sha256:app kept as %q, want in-use", k)
		}
		if r := nodetest.ImageRemovals(got.ImageGC); !reflect.DeepEqual(r, []string{"sha256:unused:space"}) {
			t.Errorf("images = %v", r)
		}
	})

	t.Run("reclaim-all also evicts pods whose sandboxes are all not ready, and every unused image whatever the thresholds", func(t *testing.T) {
		s := passSnapshot()
		s.ImageFs = nodetest.Fs(1000, 900) // 10% used: no space pass would run
		got := PlanPass(s, p, PassReclaimAll, nodetest.T0)
		wantC := []string{"job:pod-removable", "done:pod-removable", "web-0:per-container-limit"}
		if r := nodetest.ContainerRemovals(got.ContainerGC); !reflect.DeepEqual(r, wantC) {
			t.Errorf("containers = %v, want %v", r, wantC)
		}
		wantS := []string{"sb-gone:pod-removable", "sb-old-0:superseded", "sb-term:pod-removable"}
		if r := nodetest.SandboxRemovals(got.SandboxGC); !reflect.DeepEqual(r, wantS) {
			t.Errorf("sandboxes = %v, want %v", r, wantS)
		}
		// Log directories follow the kubelet's IsPodDeleted only: the
		// terminated pod's logs stay.
		if r := nodetest.LogRemovals(got.LogGC); len(r) != 2 || strings.Contains(strings.Join(r, " "), "term") {
			t.Errorf("logs = %v", r)
		}
		if r := nodetest.ImageRemovals(got.ImageGC); !reflect.DeepEqual(r, []string{"sha256:unused:reclaim"}) {
			t.Errorf("images = %v", r)
		}
		keeps := nodetest.ImageKeeps(got.ImageGC)
		if keeps["sha256:pause"] != KeepSandboxImage || keeps["sha256:app"] != KeepInUse {
			t.Errorf("keeps = %v", keeps)
		}
	})

	t.Run("reclaim-all without a ready pod source evicts no pod, only by the limits", func(t *testing.T) {
		s := passSnapshot()
		s.PodSource = PodSource{}
		got := PlanPass(s, p, PassReclaimAll, nodetest.T0)
		wantC := []string{"web-0:per-container-limit"}
		if r := nodetest.ContainerRemovals(got.ContainerGC); !reflect.DeepEqual(r, wantC) {
			t.Errorf("containers = %v, want %v", r, wantC)
		}
		if r := nodetest.LogRemovals(got.LogGC); len(r) != 1 || !strings.Contains(r[0], "dangling") {
			t.Errorf("logs = %v, want only the dangling link", r)
		}
	})

	t.Run("reclaim-all does not treat a pod with a running container as terminated", func(t *testing.T) {
		s := passSnapshot()
		s.Sandboxes[1].State = SandboxNotReady // pod "old": all sandboxes not ready, but web-2 runs
		got := PlanPass(s, p, PassReclaimAll, nodetest.T0)
		for _, r := range got.ContainerGC.Remove {
			if r.PodUID == "old" && r.Reason == RemovePodRemovable {
				t.Errorf("removed %s of a pod with a running container as pod-removable", r.ID)
			}
		}
	})

	t.Run("an unknown pass kind plans nothing", func(t *testing.T) {
		got := PlanPass(s, p, "bogus", nodetest.T0)
		if len(got.ImageGC.Remove)+len(got.ContainerGC.Remove)+len(got.SandboxGC.Remove)+len(got.LogGC.Remove) != 0 {
			t.Errorf("bogus pass planned something: %+v", got)
		}
	})
}
