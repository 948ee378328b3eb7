package attacks

import (
	"context"
	"fmt"
	"github.com/nodegc/nodegc/internal/proctest"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/engine/podsource"
	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/internal/simnode"
)

// The pod source's findings of issue 20 (items 5, 6, 7 and 14). Each test
// puts pods on a simulated node through the CRI API as the kubelet does
// (sandbox metadata, the io.kubernetes.pod.uid label, the
// kubernetes.io/config.source annotation), reads them back through the
// CRI adapter, and asks the real pod source, on a fake API server, which
// pods are removable; the container plan must then keep the victim's
// container.

// apiNode is the node the API server binds the pods to.
const apiNode = "node-a"

// runtimePod is a pod as the kubelet left it on the node.
type runtimePod struct {
	uid     string
	running bool   // a ready sandbox and a running container; else both stopped
	source  string // the kubelet's config source annotation ("api", "file")
}

// nodeWith runs the pods on a simulated node through CRI and returns the
// node's snapshot as the CRI adapter reads it.
func nodeWith(t *testing.T, pods ...runtimePod) engine.Snapshot {
	t.Helper()
	ctx := context.Background()
	_, ep := simnode.ServeTemp(t, simnode.Options{Seed: 20, Start: t0})
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	for _, p := range pods {
		md := &runtimeapi.PodSandboxMetadata{Name: "pod-" + p.uid, Uid: p.uid, Namespace: "default"}
		cfg := &runtimeapi.PodSandboxConfig{Metadata: md,
			Labels:      map[string]string{"io.kubernetes.pod.uid": p.uid, "io.kubernetes.pod.name": md.Name, "io.kubernetes.pod.namespace": md.Namespace},
			Annotations: map[string]string{"kubernetes.io/config.source": p.source}}
		sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), SandboxConfig: cfg,
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
				Image:  &runtimeapi.ImageSpec{Image: simnode.DefaultSandboxImage},
				Labels: map[string]string{"io.kubernetes.pod.uid": p.uid, "io.kubernetes.container.name": "app"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.GetContainerId()}); err != nil {
			t.Fatal(err)
		}
		if p.running {
			continue
		}
		if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.GetContainerId(), Timeout: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetPodSandboxId()}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cri.Dial(ctx, ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := engine.Snapshot{APIVersion: engine.APIVersion, Kind: engine.KindSnapshot, TakenAt: t0}
	if s.Sandboxes, err = c.ListSandboxes(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Containers, err = c.ListContainers(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// apiPod is a pod as the API server holds it.
type apiPod struct {
	uid      string
	node     string // "" means apiNode
	phase    corev1.PodPhase
	deleted  bool   // deletionTimestamp set (a finalizer holds it)
	mirrorOf string // the kubernetes.io/config.mirror annotation
	owner    string // the Node that is its controller, if any
}

func (p apiPod) object() runtime.Object {
	o := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + p.uid, Namespace: "default", UID: types.UID(p.uid)},
		Spec: corev1.PodSpec{NodeName: p.node}, Status: corev1.PodStatus{Phase: p.phase}}
	if o.Spec.NodeName == "" {
		o.Spec.NodeName = apiNode
	}
	if p.deleted {
		now := metav1.NewTime(t0)
		o.DeletionTimestamp = &now
	}
	if p.mirrorOf != "" {
		o.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: p.mirrorOf}
	}
	if p.owner != "" {
		yes := true
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: p.owner, UID: "node-uid", Controller: &yes}}
	}
	return o
}

// judge asks the real pod source, watching nodeName on a fake API server
// holding pods, about the snapshot, and plans a container pass with it.
func judge(t *testing.T, s engine.Snapshot, nodeName string, pods ...apiPod) (engine.PodSource, engine.Plan) {
	t.Helper()
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p.object())
	}
	src, err := podsource.Start(context.Background(), podsource.Options{Pods: fake.NewClientset(objs...).CoreV1().Pods(""), NodeName: nodeName, Server: "https://api:6443", SyncTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Stop()
	if s.PodSource, err = src.PodSource(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s.PodSource, engine.PlanPass(s, engine.DefaultPolicy(), engine.PassContainers, t0.Add(time.Hour))
}

// removedPods returns the pods whose containers or sandboxes the plan
// removes, sorted.
func removedPods(p engine.Plan) []string {
	var uids []string
	for _, r := range p.ContainerGC.Remove {
		uids = append(uids, r.PodUID)
	}
	for _, r := range p.SandboxGC.Remove {
		uids = append(uids, r.PodUID)
	}
	slices.Sort(uids)
	return slices.Compact(uids)
}

// TestPodSourceWrongNodeName is item 5: with the API's pods on node-a and
// nodegc asking about "vm", the list is empty, and a Succeeded pod that
// still exists must not lose its container and sandbox. The source must
// say it is inconsistent and name the node it asked about.
func TestPodSourceWrongNodeName(t *testing.T) {
	s := nodeWith(t,
		runtimePod{uid: "web-1", running: true, source: "api"},
		runtimePod{uid: "web-2", running: true, source: "api"},
		runtimePod{uid: "job", source: "api"})
	ps, plan := judge(t, s, "vm",
		apiPod{uid: "web-1", phase: corev1.PodRunning},
		apiPod{uid: "web-2", phase: corev1.PodRunning},
		apiPod{uid: "job", phase: corev1.PodSucceeded})
	if got := removedPods(plan); len(got) != 0 {
		t.Errorf("a wrong node name makes pods %v removable, though the API server still holds them", got)
	}
	if ps.Ready || !strings.Contains(ps.Description, "inconsistent: node vm: 2 pods running here are not listed") {
		t.Errorf("pod source = %+v; want not ready, inconsistent, naming node vm", ps)
	}
}

// TestPodSourceStaticPodWithoutMirror is item 6: a completed static pod
// whose mirror pod was deleted keeps its container and sandbox, as the
// kubelet, which knows it from its manifest, keeps them.
func TestPodSourceStaticPodWithoutMirror(t *testing.T) {
	s := nodeWith(t,
		runtimePod{uid: "web", running: true, source: "api"},
		runtimePod{uid: "0123456789abcdef0123456789abcdef", source: "file"})
	_, plan := judge(t, s, apiNode, apiPod{uid: "web", phase: corev1.PodRunning})
	if got := removedPods(plan); len(got) != 0 {
		t.Errorf("the plan removes the content of static pods %v, whose mirror pod is missing", got)
	}
}

// TestPodSourceForgedMirror is item 7: a tenant's pod bound to this node,
// deleted with a finalizer and terminated, carries the mirror annotation
// naming another tenant's completed pod. The victim must keep its
// content, whichever order the informer lists the two in (16 victims make
// a map-order win for the attacker all but certain on the old code), and
// even when the forged pod names this Node as its controller.
func TestPodSourceForgedMirror(t *testing.T) {
	var onNode []runtimePod
	pods := []apiPod{{uid: "web", phase: corev1.PodRunning}}
	for i := range 16 {
		victim := fmt.Sprintf("victim-%02d", i)
		onNode = append(onNode, runtimePod{uid: victim, source: "api"})
		owner := ""
		if i%2 == 1 {
			owner = apiNode
		}
		pods = append(pods, apiPod{uid: victim, phase: corev1.PodSucceeded},
			apiPod{uid: "forged-" + victim, phase: corev1.PodSucceeded, deleted: true, mirrorOf: victim, owner: owner})
	}
	onNode = append(onNode, runtimePod{uid: "web", running: true, source: "api"})
	_, plan := judge(t, nodeWith(t, onNode...), apiNode, pods...)
	if got := removedPods(plan); len(got) != 0 {
		t.Errorf("forged mirror pods make %d completed pods removable: %v", len(got), got)
	}
}

// TestPodSourceRefusedAPIServer is item 14: with the API server's port
// refused, the first pass must learn it at the first failed list, not at
// the sync timeout (an hour here, so a pass that waited for it would
// hang), and say so with the error; stopping the source must not wait. The client is the one nodegc runs with
// (kubeclient), not a fake.
func TestPodSourceRefusedAPIServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	kc, err := kubeclient.New(&rest.Config{Host: url})
	if err != nil {
		t.Fatal(err)
	}
	src, err := podsource.Start(context.Background(), podsource.Options{Pods: kc.Pods(), NodeName: apiNode, Server: url, SyncTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := proctest.Returns(t, "a pass with the API server refused", func() (engine.PodSource, error) {
		return src.PodSource(context.Background(), engine.Snapshot{})
	})
	if err != nil {
		t.Errorf("the pass with a refused API server: %v", err)
	}
	if ps.Ready || !strings.Contains(ps.Description, "connection refused") {
		t.Errorf("pod source = %+v, want not ready with the connection error", ps)
	}
	proctest.Done(t, "Stop", src.Stop)
}
