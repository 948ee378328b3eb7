package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podUIDLabel is the CRI label the kubelet puts the pod UID in.
const podUIDLabel = "io.kubernetes.pod.uid"

// removalsDoc is the part of the GCPlan contract this test reads.
type removalsDoc struct {
	ContainerGC struct {
		Remove []struct {
			ID string `json:"id"`
		} `json:"remove"`
	} `json:"containerGC"`
	SandboxGC struct {
		Remove []struct {
			ID string `json:"id"`
		} `json:"remove"`
	} `json:"sandboxGC"`
	LogGC struct {
		Remove []struct {
			Path string `json:"path"`
		} `json:"remove"`
	} `json:"logGC"`
}

// TestDeletedPodThroughTheAPIServer runs a real kube-apiserver on etcd and
// a real kubelet registered with it, runs a pod there and deletes it
// through the API. Once the API server no longer knows the pod, `nodegc
// plan`, given nothing but --kubelet-pid (the kubeconfig and node name
// come from the kubelet's command line), must name every container and
// sandbox of the pod and its log directory, as the kubelet's next pass
// removes them (ShouldPodContentBeRemoved: an unknown pod). Without the
// pod source the limits keep all of them.
func TestDeletedPodThroughTheAPIServer(t *testing.T) {
	n := startNode(t, 0)
	api := startAPIServer(t)
	nodegc := build(t, "github.com/nodegc/nodegc/cmd/nodegc", "nodegc")
	image := n.Must(t).ImportImages(1, 4<<20, "web")[0].Ref
	k := startKubelet(t, n, kubeletOptions{Kubeconfig: api.kubeconfig(t)})
	cs := api.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	if !waitFor(2*time.Minute, func() bool {
		_, err := cs.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
		return err == nil
	}) {
		t.Fatalf("the kubelet did not register node %s; tail of its log:\n%s", k.nodeName, tail(k.logFile, 40))
	}
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      k.nodeName,
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullNever}},
		},
	}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	uid := string(created.UID)
	if !waitFor(2*time.Minute, func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	}) {
		t.Fatalf("pod web did not run; tail of the kubelet's log:\n%s", tail(k.logFile, 40))
	}

	plan := func(extra ...string) removalsDoc {
		t.Helper()
		args := append([]string{"plan", "-o", "json", "--runtime-endpoint", n.Endpoint(), "--pod-logs-dir", n.PodLogsDir(),
			"--state-dir", t.TempDir(), "--kubelet-pid", strconv.Itoa(k.cmd.Process.Pid)}, extra...)
		cmd := exec.Command(nodegc, args...)
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("nodegc %v: %v: %s", args, err, stderr)
		}
		var doc removalsDoc
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("decode plan: %v", err)
		}
		return doc
	}
	// While the pod lives, nothing of it is removable.
	if got := plan(); len(got.ContainerGC.Remove)+len(got.SandboxGC.Remove)+len(got.LogGC.Remove) != 0 {
		t.Fatalf("the plan removes something of a running pod: %+v", got)
	}

	if err := cs.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	if !waitFor(2*time.Minute, func() bool {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		t.Fatalf("pod web was not deleted; tail of the kubelet's log:\n%s", tail(k.logFile, 40))
	}

	// What the pod left on the node, read just before the plan.
	rt := n.RuntimeClient()
	filter := map[string]string{podUIDLabel: uid}
	cl, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: filter}})
	if err != nil {
		t.Fatal(err)
	}
	sl, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: filter}})
	if err != nil {
		t.Fatal(err)
	}
	var wantContainers, wantSandboxes []string
	for _, c := range cl.GetContainers() {
		wantContainers = append(wantContainers, c.GetId())
	}
	for _, s := range sl.GetItems() {
		wantSandboxes = append(wantSandboxes, s.GetId())
	}
	logDir := filepath.Join(n.PodLogsDir(), fmt.Sprintf("default_web_%s", uid))
	if len(wantContainers) == 0 || len(wantSandboxes) == 0 {
		t.Fatalf("the kubelet removed the pod's containers (%d left) or sandboxes (%d left) before nodegc could plan: nothing to compare", len(wantContainers), len(wantSandboxes))
	}

	got := plan()
	var containers, sandboxes, logs []string
	for _, r := range got.ContainerGC.Remove {
		containers = append(containers, r.ID)
	}
	for _, r := range got.SandboxGC.Remove {
		sandboxes = append(sandboxes, r.ID)
	}
	for _, r := range got.LogGC.Remove {
		logs = append(logs, r.Path)
	}
	slices.Sort(wantContainers)
	slices.Sort(wantSandboxes)
	slices.Sort(containers)
	slices.Sort(sandboxes)
	if !slices.Equal(containers, wantContainers) {
		t.Errorf("containers planned %v, want every container of the deleted pod %v", containers, wantContainers)
	}
	if !slices.Equal(sandboxes, wantSandboxes) {
		t.Errorf("sandboxes planned %v, want every sandbox of the deleted pod %v", sandboxes, wantSandboxes)
	}
	if !slices.Contains(logs, logDir) {
		t.Errorf("log paths planned %v, want the deleted pod's log directory %s", logs, logDir)
	}

	// The same node without the pod source keeps all of it: the limits
	// alone (one dead container per container) do not remove them.
	off := plan("--pod-source=off")
	if len(off.SandboxGC.Remove) != 0 || slices.ContainsFunc(off.LogGC.Remove, func(r struct {
		Path string `json:"path"`
	}) bool {
		return r.Path == logDir
	}) {
		t.Errorf("with --pod-source=off the plan still removes the deleted pod's sandbox or logs: %+v", off)
	}
}
