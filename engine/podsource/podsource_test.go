package podsource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/nodegc/nodegc/internal/proctest"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/kubeclient"
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
	owner      *metav1.OwnerReference  // the controller; nil means the kubelet's (Node node) on a mirror pod
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
		owner := s.owner
		if owner == nil {
			owner = nodeOwner(p.Spec.NodeName)
		}
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	} else if s.owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*s.owner}
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

// nodeOwner is the controller reference the kubelet puts on a mirror pod
// (pkg/kubelet/pod/mirror_client.go CreateMirrorPod, v1.36.3).
func nodeOwner(name string) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: "node-uid", Controller: &yes}
}

// nodePod is what one pod has on the node, with named fields.
type nodePod struct {
	uid    string
	ready  bool   // a ready sandbox: the pod runs here now
	source string // the sandbox's config source; "" means "api", "none" none
}

// nodeOf builds a snapshot holding one sandbox and one exited container
// per pod.
func nodeOf(pods ...nodePod) *engine.Snapshot {
	var s engine.Snapshot
	for _, p := range pods {
		sb, c := deadPod(p.uid)
		sb[0].ConfigSource = cmp.Or(p.source, engine.ConfigSourceAPI)
		if p.source == "none" {
			sb[0].ConfigSource = ""
		}
		sb[0].PodNamespace, sb[0].PodName = "default", "pod-"+p.uid
		if p.ready {
			sb[0].State = engine.SandboxReady
		}
		s.Sandboxes = append(s.Sandboxes, sb...)
		s.Containers = append(s.Containers, c...)
	}
	return &s
}

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
	src, err := Start(context.Background(), Options{Pods: cs.CoreV1().Pods(""), NodeName: node, Server: "https://fake:6443", SyncTimeout: time.Minute})
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
			name: "a finished static pod whose mirror pod is missing keeps its content (kubetypes.IsStaticPod: config source file; the kubelet knows it from its manifest)",
			snap: nodeOf(nodePod{uid: "p", source: "file"}),
			want: []string{},
		},
		{
			name: "a finished static pod from a URL keeps its content too (kubetypes.HTTPSource is not ApiserverSource)",
			snap: nodeOf(nodePod{uid: "p", source: "http"}),
			want: []string{},
		},
		{
			name: "a static pod whose mirror pod is deleted and terminated keeps its content: the API server does not judge static pods",
			pods: []podSpec{{uid: "mirror-1", mirrorOf: "p", deleting: true, containers: []corev1.ContainerState{exited}}},
			snap: nodeOf(nodePod{uid: "p", source: "file"}),
			want: []string{},
		},
		{
			name: "a static pod whose mirror pod was evicted keeps its content",
			pods: []podSpec{{uid: "mirror-1", mirrorOf: "p", phase: corev1.PodFailed, reason: "Evicted"}},
			snap: nodeOf(nodePod{uid: "p", source: "file"}),
			want: []string{},
		},
		{
			name: "a pod's own UID is never shadowed by another pod's mirror annotation naming it (pod_workers.go keys pods by UID)",
			pods: []podSpec{
				{uid: "p", phase: corev1.PodSucceeded},
				{uid: "fake-mirror", mirrorOf: "p", deleting: true, phase: corev1.PodSucceeded},
			},
			snap: nodeOf(nodePod{uid: "p"}),
			want: []string{},
		},
		{
			name: "a mirror annotation naming a deleted API pod does not keep it: only static pods have mirrors",
			pods: []podSpec{{uid: "fake-mirror", mirrorOf: "p"}},
			snap: nodeOf(nodePod{uid: "p"}),
			want: []string{"p"},
		},
		{
			name: "a sandbox without a config source (another CRI client made it) is judged as an API pod, as kubetypes.IsStaticPod does",
			snap: nodeOf(nodePod{uid: "p", source: "none"}),
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
			name: "a pod being deleted and terminated that still has a ready sandbox is not removable (isPodStatusCacheTerminal)",
			pods: []podSpec{{uid: "p", deleting: true, phase: corev1.PodSucceeded}},
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

// TestSourceAgreesWithTheNode pins when the API server's list may be
// believed: every pod that runs here (a ready sandbox) must be in it, an
// API pod by its UID, a static pod through a mirror pod the kubelet made
// (pkg/kubelet/pod/mirror_client.go CreateMirrorPod: controller Node
// <nodeName>; the annotation kubetypes.ConfigMirrorAnnotationKey holds the
// static pod's UID). Otherwise the source is not ready, nothing is
// removable, and it says why, naming the node it asked about.
func TestSourceAgreesWithTheNode(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		pods []podSpec
		snap *engine.Snapshot
		// unlisted is how many running pods the list lacks; 0 means the
		// source is ready.
		unlisted int
	}{
		{
			name: "every running pod is listed: ready",
			pods: []podSpec{{uid: "a"}, {uid: "b"}},
			snap: nodeOf(nodePod{uid: "a", ready: true}, nodePod{uid: "b", ready: true}, nodePod{uid: "gone"}),
		},
		{
			name:     "a wrong node name lists none of the running pods: inconsistent, nothing removable",
			pods:     []podSpec{{uid: "a", node: "node-b"}, {uid: "b", node: "node-b"}},
			snap:     nodeOf(nodePod{uid: "a", ready: true}, nodePod{uid: "b", ready: true}, nodePod{uid: "gone"}),
			unlisted: 2,
		},
		{
			name:     "one running pod missing from the list is enough to distrust it",
			pods:     []podSpec{{uid: "a"}},
			snap:     nodeOf(nodePod{uid: "a", ready: true}, nodePod{uid: "b", ready: true}, nodePod{uid: "gone"}),
			unlisted: 1,
		},
		{
			name: "a pod that no longer runs need not be listed: that is what deleted means",
			snap: nodeOf(nodePod{uid: "gone"}),
		},
		{
			name: "a running static pod is listed through the mirror pod the kubelet made for it",
			pods: []podSpec{{uid: "mirror-1", mirrorOf: "s"}},
			snap: nodeOf(nodePod{uid: "s", ready: true, source: "file"}, nodePod{uid: "gone"}),
		},
		{
			name:     "a running static pod without a mirror pod is not listed",
			snap:     nodeOf(nodePod{uid: "s", ready: true, source: "file"}, nodePod{uid: "gone"}),
			unlisted: 1,
		},
		{
			name:     "a mirror pod owned by another node does not list a static pod",
			pods:     []podSpec{{uid: "mirror-1", mirrorOf: "s", owner: nodeOwner("node-b")}},
			snap:     nodeOf(nodePod{uid: "s", ready: true, source: "file"}, nodePod{uid: "gone"}),
			unlisted: 1,
		},
		{
			name: "a mirror pod whose controller is not a Node does not list a static pod",
			pods: []podSpec{{uid: "mirror-1", mirrorOf: "s",
				owner: &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: node, UID: "rs", Controller: &yes}}},
			snap:     nodeOf(nodePod{uid: "s", ready: true, source: "file"}, nodePod{uid: "gone"}),
			unlisted: 1,
		},
		{
			name:     "a running API pod is listed by its own UID, never through a mirror annotation naming it",
			pods:     []podSpec{{uid: "mirror-1", mirrorOf: "a"}},
			snap:     nodeOf(nodePod{uid: "a", ready: true}, nodePod{uid: "gone"}),
			unlisted: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := startFake(t, fake.NewClientset(objects(tt.pods)...))
			got, err := src.PodSource(context.Background(), *tt.snap)
			if err != nil {
				t.Fatal(err)
			}
			if tt.unlisted == 0 {
				if !got.Ready || !slices.Equal(got.RemovablePodUIDs, []string{"gone"}) {
					t.Errorf("got %+v, want ready with the pod that is gone removable", got)
				}
				return
			}
			if got.Ready || len(got.RemovablePodUIDs) != 0 {
				t.Errorf("got %+v, want not ready with nothing removable", got)
			}
			want := fmt.Sprintf("pod source inconsistent: node %s: %d pods running here are not listed by the API server https://fake:6443 (wrong --node-name? e.g. default/pod-", node, tt.unlisted)
			if !strings.HasPrefix(got.Description, want) || !strings.HasSuffix(got.Description, ": limits only") {
				t.Errorf("description = %q, want it to start %q", got.Description, want)
			}
			if d := src.Describe(); d != got.Description {
				t.Errorf("Describe() = %q, want the judged state %q", d, got.Description)
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
	// The fake API server keeps no history: a deletion made after the
	// informer's list but before its watch is registered is never
	// delivered (the watch starts from the list's resource version, and
	// the pod is gone). The reactor runs under the fake's lock, so once it
	// has run, the watch is registered before any later call is served.
	watching := make(chan struct{})
	var once sync.Once
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
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

	// The first list's pod reaches the generation through the informer's
	// handlers, asynchronously: wait for it (a bound, not a timing
	// assertion).
	deadline := time.Now().Add(30 * time.Second)
	for src.Generation() != 1<<1|1 {
		if time.Now().After(deadline) {
			t.Fatalf("generation %d after the first list of one pod; want %d", src.Generation(), 1<<1|1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	gen := src.Generation()
	select {
	case <-watching:
	case <-time.After(30 * time.Second):
		t.Fatal("the informer never watched the pods")
	}
	if err := cs.CoreV1().Pods("default").Delete(context.Background(), live.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The watch delivers the deletion asynchronously: wait for it (a
	// bound, not a timing assertion). What PodSource says changes, and so
	// does the generation (engine.Options.PodSourceGen).
	deadline = time.Now().Add(30 * time.Second)
	for {
		got, _ = src.PodSource(context.Background(), snap)
		if slices.Equal(got.RemovablePodUIDs, []string{"p"}) && src.Generation() != gen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted pod never became removable, or the generation never moved (%d): %+v", src.Generation(), got)
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
	src, err := Start(context.Background(), Options{Pods: cs.CoreV1().Pods(""), NodeName: node, Server: "https://down:6443", SyncTimeout: time.Hour})
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
	if _, err := Start(context.Background(), Options{Pods: fake.NewClientset().CoreV1().Pods("")}); err == nil {
		t.Error("Start without a node name succeeded")
	}
}

// TestSourceReportsAnUnreachableAPIServer runs the real client (a
// clientset on rest.Config, which client-go lets stream a watch-list)
// against API servers that refuse, fail or never answer. The first pass
// must not wait past the failure (or the sync timeout, for one that never
// answers) and must say why, and Stop must not block.
func TestSourceReportsAnUnreachableAPIServer(t *testing.T) {
	refused := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}
	failing := func(t *testing.T) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "etcd is down", http.StatusInternalServerError)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	silent := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var held []net.Conn // accepted, never answered; closed with l
		done := make(chan struct{})
		t.Cleanup(func() {
			l.Close()
			<-done
			for _, c := range held {
				c.Close()
			}
		})
		go func() {
			defer close(done)
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				held = append(held, c)
			}
		}()
		return "http://" + l.Addr().String()
	}
	tests := []struct {
		name   string
		server func(t *testing.T) string
		// sync is the sync timeout: an hour where the error must come
		// first, so that a pass waiting for the timeout would hang past
		// proctest.Returns' bound instead of passing slowly.
		sync time.Duration
		want string
	}{
		{"a refused connection is reported with its error at the first failed list", refused, time.Hour, "connect: connection refused"},
		{"a server error is reported with its error at the first failed list", failing, time.Hour, "etcd is down"},
		{"a server that never answers is reported at the sync timeout", silent, 300 * time.Millisecond, "no answer within 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.server(t)
			kc, err := kubeclient.New(&rest.Config{Host: url})
			if err != nil {
				t.Fatal(err)
			}
			src, err := Start(context.Background(), Options{Pods: kc.Pods(), NodeName: node, Server: url, SyncTimeout: tt.sync})
			if err != nil {
				t.Fatal(err)
			}
			got, err := proctest.Returns(t, "PodSource", func() (engine.PodSource, error) { return src.PodSource(context.Background(), snapshotOf("p")) })
			if err != nil {
				t.Fatal(err)
			}
			if got.Ready || len(got.RemovablePodUIDs) != 0 {
				t.Errorf("got %+v, want not ready with nothing removable", got)
			}
			if !strings.Contains(got.Description, tt.want) || !strings.HasSuffix(got.Description, ": limits only") {
				t.Errorf("description = %q, want %q and 'limits only'", got.Description, tt.want)
			}
			proctest.Done(t, "Stop", src.Stop)
			proctest.Done(t, "the informer after Stop", func() { <-src.Done() })
		})
	}
}
