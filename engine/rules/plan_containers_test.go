package rules

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
)

func TestPlanContainers(t *testing.T) {
	def := model.ContainerPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}
	tests := []struct {
		name       string
		policy     model.ContainerPolicy
		containers []model.Container
		podSource  model.PodSource
		// want is "id:reason" in execution order.
		want []string
	}{
		{
			name:   "running containers are never evictable",
			policy: model.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: 0},
			containers: []model.Container{
				{ID: "r1", PodUID: "p", Name: "a", State: model.ContainerRunning, CreatedAt: nodetest.Ago(time.Hour)},
				{ID: "r2", PodUID: "p", Name: "a", Attempt: 1, State: model.ContainerRunning, CreatedAt: nodetest.Ago(time.Hour)},
			},
			podSource: model.PodSource{Ready: true, RemovablePodUIDs: []string{"p"}},
			want:      []string{},
		},
		{
			name:   "a dead container younger than MinAge stays and one exactly MinAge old goes",
			policy: model.ContainerPolicy{MinAge: time.Minute, MaxPerPodContainer: 0, MaxContainers: -1},
			containers: []model.Container{
				nodetest.Dead("young", "p", "a", 1, 59*time.Second),
				nodetest.Dead("exact", "p", "a", 0, time.Minute),
			},
			want: []string{"exact:per-container-limit"},
		},
		{
			name:   "MaxPerPodContainer 1 keeps the newest dead instance of each unit, removing the oldest first",
			policy: def,
			containers: []model.Container{
				nodetest.Dead("a0", "p", "a", 0, 3*time.Hour), nodetest.Dead("a2", "p", "a", 2, time.Hour), nodetest.Dead("a1", "p", "a", 1, 2*time.Hour),
				nodetest.Dead("b0", "p", "b", 0, 3*time.Hour),
			},
			want: []string{"a0:per-container-limit", "a1:per-container-limit"},
		},
		{
			// kuberuntime_gc.go v1.36: removeOldestN sorts byCreated,
			// whose Less is createTime.After; the attempt is not read.
			name:   "within a unit the newest is the latest createdAt whatever the attempt (byCreated)",
			policy: def,
			containers: []model.Container{
				nodetest.Dead("attempt5-new", "p", "a", 5, time.Hour), nodetest.Dead("attempt9-old", "p", "a", 9, 3*time.Hour),
			},
			want: []string{"attempt9-old:per-container-limit"},
		},
		{
			// The case, from kuberuntime_gc.go v1.36
			// evictContainers: 5 units > MaxContainers 4, so each unit
			// keeps max(1, 4/5) = 1 (all do), then the flattened list is
			// sorted byCreated and removeOldestN drops the oldest one.
			name:   "across units the node limit removes the oldest by createdAt, at attempt 6, not the youngest attempt 0",
			policy: model.ContainerPolicy{MaxPerPodContainer: 1, MaxContainers: 4},
			containers: []model.Container{
				nodetest.Dead("v-attempt6", "p1", "v", 6, 5*time.Hour),
				nodetest.Dead("w-attempt0", "p2", "w", 0, 4*time.Hour),
				nodetest.Dead("x-attempt3", "p3", "x", 3, 3*time.Hour),
				nodetest.Dead("y-attempt1", "p4", "y", 1, 2*time.Hour),
				nodetest.Dead("z-attempt0", "p5", "z", 0, time.Hour),
			},
			want: []string{"v-attempt6:node-limit"},
		},
		{
			// kuberuntime_gc.go v1.36 evictContainers: the flattened list
			// is sorted byCreated over all units, attempts ignored.
			name:   "the node limit's global order is createdAt only: a high attempt created later stays",
			policy: model.ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 2},
			containers: []model.Container{
				nodetest.Dead("x-a0-old", "p1", "x", 0, 6*time.Hour), nodetest.Dead("x-a7-mid", "p1", "x", 7, 3*time.Hour),
				nodetest.Dead("y-a0-new", "p2", "y", 0, 1*time.Hour), nodetest.Dead("y-a9-old", "p2", "y", 9, 5*time.Hour),
				nodetest.Dead("z-a2-new", "p3", "z", 2, 2*time.Hour),
			},
			// Each unit keeps max(1, 2/3) = 1 by createdAt: x-a7-mid,
			// y-a0-new, z-a2-new. Then 3 > 2: the oldest, x-a7-mid, goes.
			want: []string{"x-a0-old:node-limit", "y-a9-old:node-limit", "x-a7-mid:node-limit"},
		},
		{
			// kuberuntime_gc.go v1.36 evictableContainers: a container is
			// skipped when newestGCTime.Before(createdAt), so one created
			// exactly at now-MinAge is evictable and one a nanosecond
			// later is not.
			name:   "MinAge: created at now-MinAge is evictable, a nanosecond later is not",
			policy: model.ContainerPolicy{MinAge: time.Hour, MaxPerPodContainer: 0, MaxContainers: -1},
			containers: []model.Container{
				nodetest.Dead("exact", "p", "a", 0, time.Hour), nodetest.Dead("younger", "p", "b", 0, time.Hour-time.Nanosecond),
			},
			want: []string{"exact:per-container-limit"},
		},
		{
			// kuberuntime_gc.go v1.36 evictContainers: units trimmed to 0
			// by MaxPerPodContainer stay in the map, so they still count
			// in MaxContainers / NumEvictUnits.
			name:   "units emptied by the per-container limit still count in the node limit's division",
			policy: model.ContainerPolicy{MaxPerPodContainer: 2, MaxContainers: 3},
			containers: []model.Container{
				nodetest.Dead("x0", "p1", "x", 0, 6*time.Hour), nodetest.Dead("x1", "p1", "x", 0, 5*time.Hour), nodetest.Dead("x2", "p1", "x", 0, 4*time.Hour),
				nodetest.Dead("y0", "p2", "y", 0, 3*time.Hour), nodetest.Dead("y1", "p2", "y", 0, 2*time.Hour),
				nodetest.Dead("z0", "p3", "z", 0, 90*time.Minute), nodetest.Dead("z1", "p3", "z", 0, 80*time.Minute),
			},
			// Per container: x0 goes; 6 left > 3, 3 units: keep 1 each.
			want: []string{"x0:per-container-limit", "x1:node-limit", "y0:node-limit", "z0:node-limit"},
		},
		{
			name:   "equal createdAt break ties on the ID",
			policy: def,
			containers: []model.Container{
				nodetest.Dead("c-b", "p", "a", 0, time.Hour), nodetest.Dead("c-a", "p", "a", 0, time.Hour), nodetest.Dead("c-c", "p", "a", 0, time.Hour),
			},
			want: []string{"c-c:per-container-limit", "c-b:per-container-limit"},
		},
		{
			name:   "MaxPerPodContainer below zero keeps every dead container",
			policy: model.ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: -1},
			containers: []model.Container{
				nodetest.Dead("a0", "p", "a", 0, 2*time.Hour), nodetest.Dead("a1", "p", "a", 1, time.Hour),
			},
			want: []string{},
		},
		{
			name:   "MaxPerPodContainer 0 removes every dead container",
			policy: model.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: -1},
			containers: []model.Container{
				nodetest.Dead("a0", "p", "a", 0, 2*time.Hour), nodetest.Dead("a1", "p", "a", 1, time.Hour),
			},
			want: []string{"a0:per-container-limit", "a1:per-container-limit"},
		},
		{
			name:   "MaxContainers trims each unit to floor(max/units) when that is enough",
			policy: model.ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 4},
			containers: []model.Container{
				nodetest.Dead("x0", "p1", "x", 0, 3*time.Hour), nodetest.Dead("x1", "p1", "x", 1, 2*time.Hour), nodetest.Dead("x2", "p1", "x", 2, time.Hour),
				nodetest.Dead("y0", "p2", "y", 0, 3*time.Hour), nodetest.Dead("y1", "p2", "y", 1, 2*time.Hour), nodetest.Dead("y2", "p2", "y", 2, time.Hour),
				nodetest.Dead("z0", "p3", "z", 0, 3*time.Hour), nodetest.Dead("z1", "p3", "z", 1, 2*time.Hour), nodetest.Dead("z2", "p3", "z", 2, time.Hour),
			},
			want: []string{
				"x0:node-limit", "x1:node-limit", "y0:node-limit", "y1:node-limit", "z0:node-limit", "z1:node-limit",
			},
		},
		{
			name:   "MaxContainers below the unit count keeps one per unit, then removes the globally oldest",
			policy: model.ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 2},
			containers: []model.Container{
				nodetest.Dead("x0", "p1", "x", 0, 6*time.Hour), nodetest.Dead("x1", "p1", "x", 1, 5*time.Hour),
				nodetest.Dead("y0", "p2", "y", 0, 4*time.Hour), nodetest.Dead("y1", "p2", "y", 1, 1*time.Hour),
				nodetest.Dead("z0", "p3", "z", 0, 3*time.Hour), nodetest.Dead("z1", "p3", "z", 1, 2*time.Hour),
			},
			// Per unit: keep x1, y1, z1. Then 3 > 2: the oldest of those
			// byCreated is x1 (created 5h ago).
			want: []string{"x0:node-limit", "y0:node-limit", "z0:node-limit", "x1:node-limit"},
		},
		{
			name:   "MaxContainers 0 removes every dead container",
			policy: model.ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 0},
			containers: []model.Container{
				nodetest.Dead("x0", "p1", "x", 0, 2*time.Hour), nodetest.Dead("y0", "p2", "y", 0, time.Hour),
			},
			want: []string{"x0:node-limit", "y0:node-limit"},
		},
		{
			name:   "MaxContainers at or above the total removes nothing",
			policy: model.ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 2},
			containers: []model.Container{
				nodetest.Dead("x0", "p1", "x", 0, 2*time.Hour), nodetest.Dead("y0", "p2", "y", 0, time.Hour),
			},
			want: []string{},
		},
		{
			name:   "the per-container limit applies before the node limit",
			policy: model.ContainerPolicy{MaxPerPodContainer: 2, MaxContainers: 3},
			containers: []model.Container{
				nodetest.Dead("x0", "p1", "x", 0, 6*time.Hour), nodetest.Dead("x1", "p1", "x", 1, 5*time.Hour), nodetest.Dead("x2", "p1", "x", 2, 4*time.Hour),
				nodetest.Dead("y0", "p2", "y", 0, 3*time.Hour), nodetest.Dead("y1", "p2", "y", 1, 2*time.Hour),
			},
			// Per container: x0 goes (x keeps 2). Then 4 > 3: each unit
			// keeps floor(3/2) = 1, so x1 and y0 go.
			want: []string{"x0:per-container-limit", "x1:node-limit", "y0:node-limit"},
		},
		{
			name:   "CREATED and UNKNOWN containers are dead",
			policy: model.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: -1},
			containers: []model.Container{
				{ID: "created", PodUID: "p", Name: "a", State: model.ContainerCreated, CreatedAt: nodetest.Ago(time.Hour)},
				{ID: "unknown", PodUID: "p", Name: "b", State: model.ContainerUnknown, CreatedAt: nodetest.Ago(time.Hour)},
			},
			want: []string{"created:per-container-limit", "unknown:per-container-limit"},
		},
		{
			name:   "a container in a state the contract does not name is kept",
			policy: model.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: 0},
			containers: []model.Container{
				{ID: "weird", PodUID: "p", Name: "a", State: "CONTAINER_PAUSED", CreatedAt: nodetest.Ago(time.Hour)},
			},
			want: []string{},
		},
		{
			name:   "with a ready pod source every dead container of a removable pod goes, newest included",
			policy: def,
			containers: []model.Container{
				nodetest.Dead("gone1", "gone", "a", 1, time.Hour), nodetest.Dead("gone0", "gone", "a", 0, 2*time.Hour),
				nodetest.Dead("live0", "live", "a", 0, 2*time.Hour),
			},
			podSource: model.PodSource{Ready: true, RemovablePodUIDs: []string{"gone"}},
			want:      []string{"gone0:pod-removable", "gone1:pod-removable"},
		},
		{
			name:   "without a ready pod source a removable pod gets only the limits",
			policy: def,
			containers: []model.Container{
				nodetest.Dead("gone1", "gone", "a", 1, time.Hour), nodetest.Dead("gone0", "gone", "a", 0, 2*time.Hour),
			},
			podSource: model.PodSource{Ready: false, RemovablePodUIDs: []string{"gone"}},
			want:      []string{"gone0:per-container-limit"},
		},
		{
			name:   "units are per pod and name: the same name in two pods is two units",
			policy: def,
			containers: []model.Container{
				nodetest.Dead("p1-a", "p1", "a", 0, time.Hour), nodetest.Dead("p2-a", "p2", "a", 0, time.Hour),
			},
			want: []string{},
		},
		{
			name:   "removals are in execution order: pod-removable, then per unit in pod order, oldest first",
			policy: def,
			containers: []model.Container{
				nodetest.Dead("z-new", "z", "a", 1, time.Hour), nodetest.Dead("z-old", "z", "a", 0, 2*time.Hour),
				nodetest.Dead("b-new", "b", "a", 1, time.Hour), nodetest.Dead("b-old", "b", "a", 0, 2*time.Hour),
				nodetest.Dead("r-0", "r", "a", 0, time.Hour),
			},
			podSource: model.PodSource{Ready: true, RemovablePodUIDs: []string{"r"}},
			want:      []string{"r-0:pod-removable", "b-old:per-container-limit", "z-old:per-container-limit"},
		},
		{
			name:   "a duplicated container ID is planned once",
			policy: model.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: -1},
			containers: []model.Container{
				nodetest.Dead("dup", "p", "a", 0, time.Hour), nodetest.Dead("dup", "p", "a", 0, time.Hour),
			},
			want: []string{"dup:per-container-limit"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := nodetest.BaseSnapshot()
			s.Containers = tt.containers
			s.PodSource = tt.podSource
			got := planContainerGC(s, tt.policy, nodetest.T0)
			if r := nodetest.ContainerRemovals(got); !reflect.DeepEqual(r, tt.want) {
				t.Errorf("remove = %v\nwant     %v", r, tt.want)
			}
		})
	}
}

func TestPlanContainersRecordsWhatTheExecutorNeeds(t *testing.T) {
	s := nodetest.BaseSnapshot()
	s.Containers = []model.Container{
		{ID: "u", PodSandboxID: "sb1", PodUID: "p", Name: "a", Attempt: 3, State: model.ContainerUnknown, CreatedAt: nodetest.Ago(time.Hour)},
	}
	got := planContainerGC(s, model.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: -1}, nodetest.T0)
	want := []model.ContainerRemoval{{
		ID: "u", PodUID: "p", Name: "a", Reason: model.RemovePerContainerLimit, State: model.ContainerUnknown,
		PodSandboxID: "sb1", Attempt: 3, Detail: "each container keeps its newest 0 dead",
	}}
	t.Run("an UNKNOWN container's removal carries its state, sandbox, attempt and a detail", func(t *testing.T) {
		if !reflect.DeepEqual(got.Remove, want) {
			t.Errorf("remove = %+v\nwant     %+v", got.Remove, want)
		}
	})
	t.Run("an empty plan has a non-nil list", func(t *testing.T) {
		got := planContainerGC(nodetest.BaseSnapshot(), model.ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: -1}, nodetest.T0)
		if got.Remove == nil {
			t.Error("Remove is nil, want an empty slice")
		}
	})
}

// TestPlanContainersNamesThePod: issue 9 found container removals that
// carried a pod UID but no namespace or name. The names come from the
// pod's sandboxes, as the snapshot's containers hold only the UID.
func TestPlanContainersNamesThePod(t *testing.T) {
	s := nodetest.BaseSnapshot()
	s.Sandboxes = []model.Sandbox{
		{ID: "sb-p", PodUID: "p", PodNamespace: "shop", PodName: "web-0", State: model.SandboxNotReady, CreatedAt: nodetest.Ago(time.Hour)},
		{ID: "sb-q-old", PodUID: "q", PodNamespace: "ops", PodName: "cron-1", State: model.SandboxNotReady, CreatedAt: nodetest.Ago(2 * time.Hour)},
	}
	s.Containers = []model.Container{
		{ID: "own", PodSandboxID: "sb-p", PodUID: "p", Name: "a", State: model.ContainerExited, CreatedAt: nodetest.Ago(time.Hour)},
		{ID: "other-sandbox", PodSandboxID: "sb-q-gone", PodUID: "q", Name: "a", State: model.ContainerExited, CreatedAt: nodetest.Ago(time.Hour)},
		{ID: "no-sandbox", PodSandboxID: "sb-r", PodUID: "r", Name: "a", State: model.ContainerExited, CreatedAt: nodetest.Ago(time.Hour)},
	}
	got := planContainerGC(s, model.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: -1}, nodetest.T0)
	names := map[string]string{}
	for _, r := range got.Remove {
		names[r.ID] = r.PodNamespace + "/" + r.PodName
	}
	tests := []struct {
		name, id, want string
	}{
		{name: "a container's own sandbox names its pod", id: "own", want: "shop/web-0"},
		{name: "without its own sandbox, another sandbox of the pod names it", id: "other-sandbox", want: "ops/cron-1"},
		{name: "without any sandbox of the pod the names are empty", id: "no-sandbox", want: "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if names[tt.id] != tt.want {
				t.Errorf("%s: pod %q, want %q", tt.id, names[tt.id], tt.want)
			}
		})
	}
	t.Run("the JSON carries podNamespace and podName", func(t *testing.T) {
		b, err := json.Marshal(got.Remove[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"podNamespace":"shop","podName":"web-0"`) {
			t.Errorf("JSON %s lacks the pod's namespace and name", b)
		}
	})
}

// A plan that removes few of many evictable containers keeps its list in
// an array of about its own length, not the one with room for every
// evictable container it was built in: the idle node's plan is kept for
// minutes by the dashboard, the scheduler's status and the quiet pass's
// mark.
func TestPlanContainersHoldsNoRoomForTheEvictable(t *testing.T) {
	policy := model.ContainerPolicy{MaxPerPodContainer: 1, MaxContainers: -1}
	var cs []model.Container
	for i := range 1000 {
		// One dead container in each of 1,000 units: every one is
		// evictable and the per-container limit keeps every one.
		cs = append(cs, nodetest.Dead(fmt.Sprintf("c%d", i), fmt.Sprintf("p%d", i), "a", 0, time.Hour))
	}
	// Two more in the first unit: the two oldest of its three go.
	cs = append(cs, nodetest.Dead("old1", "p0", "a", 1, 2*time.Hour), nodetest.Dead("old2", "p0", "a", 2, 3*time.Hour))
	for _, tc := range []struct {
		name string
		cs   []model.Container
		want int
	}{{"none removed", cs[:1000], 0}, {"two removed", cs, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			got := planContainerGC(model.Snapshot{Containers: tc.cs}, policy, nodetest.T0).Remove
			if len(got) != tc.want {
				t.Fatalf("%d removals, want %d", len(got), tc.want)
			}
			if got == nil {
				t.Fatal("the list is nil; an empty plan's is [] in JSON")
			}
			if cap(got) > 8 {
				t.Errorf("the list has room for %d removals, holding %d: it keeps the array built for %d evictable containers", cap(got), len(got), len(tc.cs))
			}
		})
	}
}
