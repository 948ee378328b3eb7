package kubelet

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/realnode"
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
// a real kubelet registered with it, and a pod that ran to completion.
//   - While the API server knows the pod (Succeeded, not deleted), `nodegc
//     plan`, given nothing but --kubelet-pid (kubeconfig and node name from
//     the kubelet's command line), removes nothing of it
//     (ShouldPodContentBeRemoved: terminated but not deleted).
//   - The kubelet is stopped, so it cannot clean up first, and the pod is
//     deleted through the API. nodegc's plan must then name the pod's
//     container, its sandbox and its log directory (an unknown pod), and
//     with --pod-source=off keep them (the limits alone do).
//   - The kubelet, started again, removes the same: its pass is the
//     reference.
func TestDeletedPodThroughTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := startCluster(ctx, t, "job")
	n, nodegc, image, kubeconfig, k, cs := c.n, c.nodegc, c.image, c.kubeconfig, c.k, c.cs
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      k.nodeName,
			HostNetwork:                   true,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "work", Image: image, ImagePullPolicy: corev1.PullNever,
				Args: []string{"exit", "0"}}},
		},
	}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	uid := string(created.UID)
	logDir := filepath.Join(n.PodLogsDir(), "default_job_"+uid)
	leftovers := func() (containers, sandboxes []string, ready bool) { return podLeftovers(ctx, t, n, uid) }
	if !waitFor(2*time.Minute, func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "job", metav1.GetOptions{})
		_, sandboxes, ready := leftovers()
		return err == nil && p.Status.Phase == corev1.PodSucceeded && len(sandboxes) > 0 && !ready
	}) {
		t.Fatalf("pod job did not complete with its sandbox stopped; tail of the kubelet's log:\n%s", tail(k.logFile, 40))
	}

	plan := func(args ...string) removalsDoc {
		t.Helper()
		var doc removalsDoc
		runNodegc(t, nodegc, n, &doc, append([]string{"plan", "-o", "json"}, args...)...)
		return doc
	}
	if got := plan("--kubelet-pid", strconv.Itoa(k.cmd.Process.Pid)); len(got.ContainerGC.Remove)+len(got.SandboxGC.Remove)+len(got.LogGC.Remove) != 0 {
		t.Fatalf("the plan removes something of a pod the API server still holds (Succeeded, not deleted): %+v", got)
	}

	k.stop()
	zero := int64(0)
	if err := cs.CoreV1().Pods("default").Delete(ctx, "job", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	if !waitFor(time.Minute, func() bool {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "job", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		t.Fatal("pod job is still known to the API server after a delete with grace 0")
	}
	wantContainers, wantSandboxes, _ := leftovers()
	if len(wantContainers) == 0 || len(wantSandboxes) == 0 {
		t.Fatalf("the pod left %d containers and %d sandboxes; want at least one of each to compare", len(wantContainers), len(wantSandboxes))
	}

	got := plan("--kubeconfig", kubeconfig, "--node-name", k.nodeName, "--kubelet-pid", "-1")
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

	off := plan("--pod-source=off", "--kubelet-pid", "-1")
	if len(off.ContainerGC.Remove)+len(off.SandboxGC.Remove)+len(off.LogGC.Remove) != 0 {
		t.Errorf("with --pod-source=off the plan removes something of the deleted pod (the limits alone keep it): %+v", off)
	}

	// The kubelet, back, removes the same.
	k.start(t)
	if !waitFor(4*time.Minute, func() bool {
		containers, sandboxes, _ := leftovers()
		_, err := os.Stat(logDir)
		return len(containers) == 0 && len(sandboxes) == 0 && os.IsNotExist(err)
	}) {
		containers, sandboxes, _ := leftovers()
		t.Errorf("the kubelet did not remove the deleted pod's content: %d containers, %d sandboxes left, log dir %s", len(containers), len(sandboxes), logDir)
	}
}

// podLeftovers lists, sorted, what the pod with the UID has on the node:
// its containers and sandboxes, and whether a sandbox is ready.
func podLeftovers(ctx context.Context, t *testing.T, n *realnode.Node, uid string) (containers, sandboxes []string, ready bool) {
	t.Helper()
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
	for _, c := range cl.GetContainers() {
		containers = append(containers, c.GetId())
	}
	for _, s := range sl.GetItems() {
		sandboxes = append(sandboxes, s.GetId())
		ready = ready || s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
	}
	slices.Sort(containers)
	slices.Sort(sandboxes)
	return containers, sandboxes, ready
}

// runNodegc runs a nodegc command that prints JSON (plan -o json,
// snapshot) on the node, with its own state dir, and decodes the output
// into v.
func runNodegc(t *testing.T, nodegc string, n *realnode.Node, v any, args ...string) {
	t.Helper()
	args = append(args, "--runtime-endpoint", n.Endpoint(), "--pod-logs-dir", n.PodLogsDir(), "--state-dir", t.TempDir())
	out, err := exec.Command(nodegc, args...).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("nodegc %v: %v: %s", args, err, stderr)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("decode the output of nodegc %v: %v", args, err)
	}
}

// cluster is a real node, a real kube-apiserver and a real kubelet
// registered with it, with nodegc built and one image imported.
type cluster struct {
	n          *realnode.Node
	nodegc     string // the nodegc binary
	image      string // the imported image's reference
	kubeconfig string // the API server's, for the kubelet and nodegc
	k          *kubelet
	cs         *kubernetes.Clientset
}

// startCluster starts a cluster whose image is named after prefix and
// waits until the kubelet has registered its node.
func startCluster(ctx context.Context, t *testing.T, prefix string) cluster {
	t.Helper()
	c := cluster{n: startNode(t, 0)}
	api := startAPIServer(t)
	c.nodegc = build(t, "github.com/nodegc/nodegc/cmd/nodegc", "nodegc")
	c.image = c.n.Must(t).ImportImages(1, 4<<20, prefix)[0].Ref
	c.kubeconfig = api.kubeconfig(t)
	c.k = startKubelet(t, c.n, kubeletOptions{Kubeconfig: c.kubeconfig})
	c.cs = api.client(t)
	if !waitFor(2*time.Minute, func() bool {
		_, err := c.cs.CoreV1().Nodes().Get(ctx, c.k.nodeName, metav1.GetOptions{})
		return err == nil
	}) {
		t.Fatalf("the kubelet did not register node %s", c.k.nodeName)
	}
	return c
}
