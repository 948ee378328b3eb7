package rules

import (
	"reflect"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
)

func TestPlanSandboxes(t *testing.T) {
	sb := func(id, pod string, attempt uint32, st model.SandboxState, d time.Duration) model.Sandbox {
		return model.Sandbox{ID: id, PodUID: pod, PodName: "n-" + pod, PodNamespace: "ns", Attempt: attempt, State: st, CreatedAt: nodetest.Ago(d)}
	}
	ref := func(id, sandbox string) model.Container {
		return model.Container{ID: id, PodSandboxID: sandbox, PodUID: "p", Name: "c", State: model.ContainerExited, CreatedAt: nodetest.Ago(time.Hour)}
	}
	tests := []struct {
		name      string
		sandboxes []model.Sandbox
		survivors []model.Container
		podSource model.PodSource
		want      []string
	}{
		{
			name:      "a pod keeps its newest sandbox even when it is not ready",
			sandboxes: []model.Sandbox{sb("s0", "p", 0, model.SandboxNotReady, time.Hour)},
			want:      []string{},
		},
		{
			name: "older not-ready sandboxes that no container references are superseded, oldest first",
			sandboxes: []model.Sandbox{
				sb("s1", "p", 1, model.SandboxNotReady, 2*time.Hour), sb("s2", "p", 2, model.SandboxNotReady, time.Hour),
				sb("s0", "p", 0, model.SandboxNotReady, 3*time.Hour),
			},
			want: []string{"s0:superseded", "s1:superseded"},
		},
		{
			name: "an older sandbox a surviving container references stays",
			sandboxes: []model.Sandbox{
				sb("s0", "p", 0, model.SandboxNotReady, 2*time.Hour), sb("s1", "p", 1, model.SandboxNotReady, time.Hour),
			},
			survivors: []model.Container{ref("c0", "s0")},
			want:      []string{},
		},
		{
			name: "a READY sandbox never goes, even older or of a removable pod",
			sandboxes: []model.Sandbox{
				sb("old-ready", "p", 0, model.SandboxReady, 2*time.Hour), sb("new", "p", 1, model.SandboxNotReady, time.Hour),
				sb("gone-ready", "gone", 0, model.SandboxReady, time.Hour),
			},
			podSource: model.PodSource{Ready: true, RemovablePodUIDs: []string{"gone"}},
			want:      []string{},
		},
		{
			name: "with a ready pod source a removable pod loses every inactive sandbox, newest included",
			sandboxes: []model.Sandbox{
				sb("g0", "gone", 0, model.SandboxNotReady, 2*time.Hour), sb("g1", "gone", 1, model.SandboxNotReady, time.Hour),
				sb("g2-used", "gone", 2, model.SandboxNotReady, time.Minute),
			},
			survivors: []model.Container{ref("c", "g2-used")},
			podSource: model.PodSource{Ready: true, RemovablePodUIDs: []string{"gone"}},
			want:      []string{"g0:pod-removable", "g1:pod-removable"},
		},
		{
			name: "without a ready pod source a removable pod keeps its newest sandbox",
			sandboxes: []model.Sandbox{
				sb("g0", "gone", 0, model.SandboxNotReady, 2*time.Hour), sb("g1", "gone", 1, model.SandboxNotReady, time.Hour),
			},
			podSource: model.PodSource{Ready: false, RemovablePodUIDs: []string{"gone"}},
			want:      []string{"g0:superseded"},
		},
		{
			// kuberuntime_gc.go v1.36 removeOldestNSandboxes sorts
			// sandboxByCreated (createTime.After); the attempt is not read.
			name: "newest is the latest createdAt whatever the attempt, then the ID",
			sandboxes: []model.Sandbox{
				sb("attempt3-old", "p", 3, model.SandboxNotReady, 5*time.Hour), sb("attempt1-new", "p", 1, model.SandboxNotReady, time.Hour),
				sb("q-b", "q", 0, model.SandboxNotReady, time.Hour), sb("q-a", "q", 0, model.SandboxNotReady, time.Hour),
			},
			want: []string{"attempt3-old:superseded", "q-b:superseded"},
		},
		{
			name: "a sandbox in a state the contract does not name counts as ready",
			sandboxes: []model.Sandbox{
				sb("odd", "p", 0, "SANDBOX_WEIRD", 2*time.Hour), sb("new", "p", 1, model.SandboxNotReady, time.Hour),
			},
			want: []string{},
		},
		{
			name: "pods are handled in UID order",
			sandboxes: []model.Sandbox{
				sb("z0", "z", 0, model.SandboxNotReady, 2*time.Hour), sb("z1", "z", 1, model.SandboxNotReady, time.Hour),
				sb("a0", "a", 0, model.SandboxNotReady, 2*time.Hour), sb("a1", "a", 1, model.SandboxNotReady, time.Hour),
			},
			want: []string{"a0:superseded", "z0:superseded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := nodetest.BaseSnapshot()
			s.Sandboxes = tt.sandboxes
			s.PodSource = tt.podSource
			got := planSandboxGC(s, tt.survivors)
			if r := nodetest.SandboxRemovals(got); !reflect.DeepEqual(r, tt.want) {
				t.Errorf("remove = %v\nwant     %v", r, tt.want)
			}
			for _, r := range got.Remove {
				if r.State != model.SandboxNotReady || r.PodUID == "" {
					t.Errorf("removal %+v: want state %s and the pod UID", r, model.SandboxNotReady)
				}
			}
		})
	}
}
