package podsource

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodegc/nodegc/engine"
)

const node = "node-a"

var (
	t0      = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	deleted = metav1.NewTime(t0)
)

// podSpec builds an API pod with named fields.
type podSpec struct {
	uid        string
	node       string // "" means node
	phase      corev1.PodPhase
	reason     string
	deleting   bool
	mirrorOf   string                  // the static pod's UID
	containers []corev1.ContainerState // regular container statuses
	inits      []corev1.ContainerState
}

func (s podSpec) pod() *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + s.uid, Namespace: "default", UID: types.UID(s.uid)},
		Spec:       corev1.PodSpec{NodeName: s.node},
		Status:     corev1.PodStatus{Phase: s.phase, Reason: s.reason},
	}
	if p.Spec.NodeName == "" {
		p.Spec.NodeName = node
	}
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodRunning
	}
	if s.deleting {
		p.DeletionTimestamp = &deleted
	}
	if s.mirrorOf != "" {
		p.Annotations = map[string]string{MirrorPodAnnotation: s.mirrorOf}
	}
	for i, st := range s.containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "c" + string(rune('0'+i)), State: st})
	}
	for i, st := range s.inits {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: "i" + string(rune('0'+i)), State: st})
	}
	return p
}

var (
	running = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	exited  = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
)

// deadPod is what a pod leaves on the node after its containers died: an
// exited container and a not-ready sandbox.
func deadPod(uid string) ([]engine.Sandbox, []engine.Container) {
	return []engine.Sandbox{{ID: "sb-" + uid, PodUID: uid, State: engine.SandboxNotReady, CreatedAt: t0}},
		[]engine.Container{{ID: "c-" + uid, PodSandboxID: "sb-" + uid, PodUID: uid, Name: "app", State: engine.ContainerExited, CreatedAt: t0}}
}

// snapshotOf holds one dead pod per UID.
func snapshotOf(uids ...string) engine.Snapshot {
	var s engine.Snapshot
	for _, uid := range uids {
		sb, c := deadPod(uid)
		s.Sandboxes = append(s.Sandboxes, sb...)
		s.Containers = append(s.Containers, c...)
	}
	return s
}

// startFake starts a Source on a fake clientset holding pods and waits for
// its first list.
func startFake(t *testing.T, cs *fake.Clientset) *Source {
	t.Helper()
	src, err := Start(context.Background(), Options{Client: cs, NodeName: node, Server: "https://fake:6443", SyncTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Stop)
	if !src.WaitForSync(context.Background()) {
		t.Fatalf("the fake API server never synced: %v", src.Err())
	}
	return src
}

func objects(specs []podSpec) []runtime.Object {
	var objs []runtime.Object
	for _, s := range specs {
		objs = append(objs, s.pod())
	}
	return objs
}

// TestRemovableRules pins which pods the kubelet's pod workers let lose
// their content, each case from the kubelet v1.36.3 function it cites.
func TestRemovableRules(t *testing.T) {
	tests := []struct {
		name string
		pods []podSpec
		// snap is the node's runtime view; nil means snapshotOf("p").
		snap *engine.Snapshot
		want []string
	}{
		{
			name: "a pod the API server does not know is removable (pod_workers.go ShouldPodContentBeRemoved: an unknown pod once podsSynced)",
			want: []string{"p"},
		},
		{
			name: "a running pod that is not deleted keeps its content (ShouldPodContentBeRemoved: not evicted, not deleted)",
			pods: []podSpec{{uid: "p", containers: []corev1.ContainerState{waiting}}},
			want: []string{},
		},
		{
			name: "a succeeded pod that is not deleted keeps its content (ShouldPodContentBeRemoved: terminated but not deleted)",
			pods: []podSpec{{uid: "p", phase: corev1.PodSucceeded, containers: []corev1.ContainerState{exited}}},
			want: []string{},
		},
		{
			name: "a failed pod that is not deleted and not evicted keeps its content (ShouldPodContentBeRemoved)",
			pods: []podSpec{{uid: "p", phase: corev1.PodFailed, reason: "DeadlineExceeded"}},
			want: []string{},
		},
		{
			name: "a pod the eviction manager evicted is removable (IsEvicted: eviction_manager.go evictPod kills with isEvicted, reason Evicted)",
			pods: []podSpec{{uid: "p", phase: corev1.PodFailed, reason: "Evicted"}},
			want: []string{"p"},
		},
		{
			name: "a pod preempted for a critical pod is removable (IsEvicted: preemption.go kills with isEvicted, reason Preempting)",
			pods: []podSpec{{uid: "p", phase: corev1.PodFailed, reason: "Preempting"}},
			want: []string{"p"},
		},
		{
			name: "a pod being deleted whose container still runs is not removable (IsDeleted but not IsTerminated; volume/util IsPodTerminated)",
			pods: []podSpec{{uid: "p", deleting: true, containers: []corev1.ContainerState{exited, running}}},
			want: []string{},
		},
		{
			name: "a pod being deleted whose init container still runs is not removable (IsPodTerminated reads init containers too)",
			pods: []podSpec{{uid: "p", phase: corev1.PodPending, deleting: true, inits: []corev1.ContainerState{running}}},
			want: []string{},
		},
		{
			name: "a pod being deleted whose containers all terminated is removable (IsDeleted && IsTerminated; IsPodTerminated notRunning)",
			pods: []podSpec{{uid: "p", deleting: true, containers: []corev1.ContainerState{exited, exited}}},
			want: []string{"p"},
		},
		{
			name: "a pod being deleted whose containers wait counts as not running (IsPodTerminated notRunning: terminated or waiting)",
			pods: []podSpec{{uid: "p", deleting: true, containers: []corev1.ContainerState{waiting}}},
			want: []string{"p"},
		},
		{
			name: "a pod being deleted in a terminal phase is removable (IsPodTerminated: Failed or Succeeded)",
			pods: []podSpec{{uid: "p", phase: corev1.PodSucceeded, deleting: true, containers: []corev1.ContainerState{running}}},
			want: []string{"p"},
		},
		{
			name: "a static pod counts through its mirror pod (kubetypes.ConfigMirrorAnnotationKey holds the static pod's UID)",
			pods: []podSpec{{uid: "mirror-1", mirrorOf: "p", containers: []corev1.ContainerState{waiting}}},
			want: []string{},
		},
		{
			name: "a static pod whose mirror pod is being deleted and terminated is removable through it",
			pods: []podSpec{{uid: "mirror-1", mirrorOf: "p", deleting: true, containers: []corev1.ContainerState{exited}}},
			want: []string{"p"},
		},
		{
			name: "a pod bound to another node is unknown here, as the kubelet's config source only sees its own node's pods",
			pods: []podSpec{{uid: "p", node: "node-b"}},
			want: []string{"p"},
		},
		{
			name: "a pod unknown to the API server with a running container is not removable (pod_workers.go isPodStatusCacheTerminal: an orphan is killed before it is terminated)",
			snap: func() *engine.Snapshot {
				s := snapshotOf("p")
				s.Containers = append(s.Containers, engine.Container{ID: "c-run", PodUID: "p", Name: "side", State: engine.ContainerRunning, CreatedAt: t0})
				return &s
			}(),
			want: []string{},
		},
		{
			name: "a pod unknown to the API server with a ready sandbox is not removable (isPodStatusCacheTerminal)",
			snap: func() *engine.Snapshot {
				s := snapshotOf("p")
				s.Sandboxes = append(s.Sandboxes, engine.Sandbox{ID: "sb-new", PodUID: "p", State: engine.SandboxReady, CreatedAt: t0})
				return &s
			}(),
			want: []string{},
		},
		{
			name: "a pod that left only its log directory is judged too (kuberuntime_gc.go evictPodLogsDirectories asks ShouldPodContentBeRemoved per directory)",
			snap: &engine.Snapshot{Logs: &engine.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{"default_gone_p", "default_live_q"}}},
			pods: []podSpec{{uid: "q"}},
			want: []string{"p"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := startFake(t, fake.NewClientset(objects(tt.pods)...))
			snap := snapshotOf("p")
			if tt.snap != nil {
				snap = *tt.snap
			}
			got, err := src.PodSource(context.Background(), snap)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Ready {
				t.Fatalf("not ready after the first list: %+v", got)
			}
			if !slices.Equal(got.RemovablePodUIDs, tt.want) {
				t.Errorf("removable = %q, want %q", got.RemovablePodUIDs, tt.want)
			}
		})
	}
}

// TestSourceWatchesThisNodesPods checks the informer's list and watch: the
// field selector the kubelet's own pod source uses
// (pkg/kubelet/config/apiserver.go NewSourceApiserver:
// spec.nodeName=<nodeName>), and that a deletion seen by the watch makes
// the pod removable.
func TestSourceWatchesThisNodesPods(t *testing.T) {
	live := podSpec{uid: "p", containers: []corev1.ContainerState{running}}.pod()
	cs := fake.NewClientset(live)
	src := startFake(t, cs)

	var selectors []string
	for _, a := range cs.Actions() {
		switch a := a.(type) {
		case k8stesting.ListAction:
			selectors = append(selectors, "list "+a.GetListRestrictions().Fields.String())
		case k8stesting.WatchAction:
			selectors = append(selectors, "watch "+a.GetWatchRestrictions().Fields.String())
		}
	}
	if !slices.Contains(selectors, "list spec.nodeName="+node) {
		t.Errorf("list/watch selectors = %q, want a list with spec.nodeName=%s", selectors, node)
	}

	snap := snapshotOf("p")
	got, _ := src.PodSource(context.Background(), snap)
	if len(got.RemovablePodUIDs) != 0 {
		t.Fatalf("a live pod is removable: %q", got.RemovablePodUIDs)
	}
	if want := "API server https://fake:6443, node node-a: synced, 1 pods"; got.Description != want {
		t.Errorf("description = %q, want %q", got.Description, want)
	}

	if err := cs.CoreV1().Pods("default").Delete(context.Background(), live.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The watch delivers the deletion asynchronously: wait for it (a
	// bound, not a timing assertion).
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ = src.PodSource(context.Background(), snap)
		if slices.Equal(got.RemovablePodUIDs, []string{"p"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted pod never became removable: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSourceNotSynced: an API server that does not answer leaves the source
// not ready (the kubelet's sources-not-ready: limits only), with the error
// in its description, and PodSource returns at the first failed list
// instead of waiting out the sync timeout (an hour here: the test would
// time out).
func TestSourceNotSynced(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	src, err := Start(context.Background(), Options{Client: cs, NodeName: node, Server: "https://down:6443", SyncTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Stop()
	got, err := src.PodSource(context.Background(), snapshotOf("p"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Ready || len(got.RemovablePodUIDs) != 0 {
		t.Errorf("an unsynced source must be not ready with nothing removable, got %+v", got)
	}
	if !strings.Contains(got.Description, "connection refused") || !strings.HasSuffix(got.Description, "limits only") {
		t.Errorf("description = %q, want the list error and 'limits only'", got.Description)
	}
	if src.WaitForSync(context.Background()) {
		t.Error("WaitForSync reported a sync that never happened")
	}
}

// TestStartRefusesMissingOptions: no client or no node name is an error,
// not a source that silently never syncs.
func TestStartRefusesMissingOptions(t *testing.T) {
	if _, err := Start(context.Background(), Options{NodeName: node}); err == nil {
		t.Error("Start without a client succeeded")
	}
	if _, err := Start(context.Background(), Options{Client: fake.NewClientset()}); err == nil {
		t.Error("Start without a node name succeeded")
	}
}
