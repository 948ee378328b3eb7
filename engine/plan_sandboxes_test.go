package engine

import (
	"reflect"
	"testing"
	"time"
)

func TestPlanSandboxes(t *testing.T) {
	sb := func(id, pod string, attempt uint32, st SandboxState, d time.Duration) Sandbox {
		return Sandbox{ID: id, PodUID: pod, PodName: "n-" + pod, PodNamespace: "ns", Attempt: attempt, State: st, CreatedAt: ago(d)}
	}
	ref := func(id, sandbox string) Container {
		return Container{ID: id, PodSandboxID: sandbox, PodUID: "p", Name: "c", State: ContainerExited, CreatedAt: ago(time.Hour)}
	}
	tests := []struct {
		name      string
		sandboxes []Sandbox
		survivors []Container
		podSource PodSource
		want      []string
	}{
		{
			name:      "a pod keeps its newest sandbox even when it is not ready",
			sandboxes: []Sandbox{sb("s0", "p", 0, SandboxNotReady, time.Hour)},
			want:      []string{},
		},
		{
			name: "older not-ready sandboxes that no container references are superseded, oldest first",
			sandboxes: []Sandbox{
				sb("s1", "p", 1, SandboxNotReady, 2*time.Hour), sb("s2", "p", 2, SandboxNotReady, time.Hour),
				sb("s0", "p", 0, SandboxNotReady, 3*time.Hour),
			},
			want: []string{"s0:superseded", "s1:superseded"},
		},
		{
			name: "an older sandbox a surviving container references stays",
			sandboxes: []Sandbox{
				sb("s0", "p", 0, SandboxNotReady, 2*time.Hour), sb("s1", "p", 1, SandboxNotReady, time.Hour),
			},
			survivors: []Container{ref("c0", "s0")},
			want:      []string{},
		},
		{
			name: "a READY sandbox never goes, even older or of a removable pod",
			sandboxes: []Sandbox{
				sb("old-ready", "p", 0, SandboxReady, 2*time.Hour), sb("new", "p", 1, SandboxNotReady, time.Hour),
				sb("gone-ready", "gone", 0, SandboxReady, time.Hour),
			},
			podSource: PodSource{Ready: true, RemovablePodUIDs: []string{"gone"}},
			want:      []string{},
		},
		{
			name: "with a ready pod source a removable pod loses every inactive sandbox, newest included",
			sandboxes: []Sandbox{
				sb("g0", "gone", 0, SandboxNotReady, 2*time.Hour), sb("g1", "gone", 1, SandboxNotReady, time.Hour),
				sb("g2-used", "gone", 2, SandboxNotReady, time.Minute),
			},
			survivors: []Container{ref("c", "g2-used")},
			podSource: PodSource{Ready: true, RemovablePodUIDs: []string{"gone"}},
			want:      []string{"g0:pod-removable", "g1:pod-removable"},
		},
		{
			name: "without a ready pod source a removable pod keeps its newest sandbox",
			sandboxes: []Sandbox{
				sb("g0", "gone", 0, SandboxNotReady, 2*time.Hour), sb("g1", "gone", 1, SandboxNotReady, time.Hour),
			},
			podSource: PodSource{Ready: false, RemovablePodUIDs: []string{"gone"}},
			want:      []string{"g0:superseded"},
		},
		{
			// kuberuntime_gc.go v1.36 removeOldestNSandboxes sorts
			// sandboxByCreated (createTime.After); the attempt is not read.
			name: "newest is the latest createdAt whatever the attempt, then the ID",
			sandboxes: []Sandbox{
				sb("attempt3-old", "p", 3, SandboxNotReady, 5*time.Hour), sb("attempt1-new", "p", 1, SandboxNotReady, time.Hour),
				sb("q-b", "q", 0, SandboxNotReady, time.Hour), sb("q-a", "q", 0, SandboxNotReady, time.Hour),
			},
			want: []string{"attempt3-old:superseded", "q-b:superseded"},
		},
		{
			name: "a sandbox in a state the contract does not name counts as ready",
			sandboxes: []Sandbox{
				sb("odd", "p", 0, "SANDBOX_WEIRD", 2*time.Hour), sb("new", "p", 1, SandboxNotReady, time.Hour),
			},
			want: []string{},
		},
		{
			name: "pods are handled in UID order",
			sandboxes: []Sandbox{
				sb("z0", "z", 0, SandboxNotReady, 2*time.Hour), sb("z1", "z", 1, SandboxNotReady, time.Hour),
				sb("a0", "a", 0, SandboxNotReady, 2*time.Hour), sb("a1", "a", 1, SandboxNotReady, time.Hour),
			},
			want: []string{"a0:superseded", "z0:superseded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSnapshot()
			s.Sandboxes = tt.sandboxes
			s.PodSource = tt.podSource
			got := planSandboxGC(s, tt.survivors)
			if r := sandboxRemovals(got); !reflect.DeepEqual(r, tt.want) {
				t.Errorf("remove = %v\nwant     %v", r, tt.want)
			}
			for _, r := range got.Remove {
				if r.State != SandboxNotReady || r.PodUID == "" {
					t.Errorf("removal %+v: want state %s and the pod UID", r, SandboxNotReady)
				}
			}
		})
	}
}
