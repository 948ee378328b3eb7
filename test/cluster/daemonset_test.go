package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/realnode"
)

// cluster is a one-node cluster: a real containerd 2.2 with the image
// imported, the control plane, and a kubelet registered with it.
type cluster struct {
	node     *realnode.Node
	cp       *controlPlane
	cs       *kubernetes.Clientset
	nodeName string
	dir      string // root-owned, 0700, outside /tmp: the kubelet's files
	// kubeletConfig is the kubelet's --config, which the agent reads;
	// kubeletConfigText is what the kubelet read there, less the band
	// written for the agent (writeKubeletBand).
	kubeletConfig, kubeletConfigText string
	// agentArgs are added to the agent's arguments.
	agentArgs []string
	// proxy is the CRI socket the kubelet and the agent use (socket),
	// in front of containerd's.
	proxy  *criProxy
	socket string
	// port is the agent's metrics port once deploy/ is applied;
	// uninstalled says deploy/ was deleted since (TestUninstall).
	port        int
	uninstalled bool
	// kubeletStarted is when the kubelet started: its own container GC
	// runs a few seconds later and every minute after.
	kubeletStarted time.Time
	// kubeletPID is the kubelet's process ID on the host.
	kubeletPID int
	// kubeletLog is the kubelet's output.
	kubeletLog string
}

// The agent's image GC band, and the image filesystem's size: 1 GiB of
// tmpfs, so that a band of 5 % is about 50 MiB (what a few dozen small
// images hold). The agent reads the kubelet config file's band and, as
// deploy/ runs it (--image-gc-margin=5), acts margin points below it.
const (
	imageGCHigh   = 50
	imageGCLow    = 45
	imageGCMargin = 5
	imageFsSize   = 1 << 30
)

// startCluster starts everything and waits until the Node is Ready.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		kubetest.SkipOrFail(t, "a real cluster needs root (running as uid %d)", os.Geteuid())
	}
	kubelet := kubetest.Binary(t, "kubelet")
	archive := buildImage(t)
	c := &cluster{nodeName: fmt.Sprintf("nodegc-cluster-%d", os.Getpid())}
	// Not under /tmp: the agent believes a file the kubelet's flags name
	// only when every directory above it is root's alone.
	dir, err := os.MkdirTemp("/var/lib", "nodegc-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	c.node = realnode.Start(t, realnode.Options{Runtime: realnode.Containerd2(), ImageFsSize: imageFsSize})
	c.node.Must(t).Import(archive)
	c.socket = filepath.Join(dir, "cri.sock")
	c.proxy = startCRIProxy(t, c.socket, c.node.Socket())
	// The runtime's network is ready once it loads a CNI config; every pod
	// here runs on the host network, so no plugin ever runs.
	netd := filepath.Join(c.node.Dir(), "cni", "net.d")
	if err := os.MkdirAll(netd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(netd, "10-host-only.conflist"),
		[]byte(`{"cniVersion": "1.0.0", "name": "host-only", "plugins": [{"type": "loopback"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.cp = startControlPlane(t, c.nodeName)
	c.cs = c.cp.client(t)

	rootDir := filepath.Join(dir, "kubelet")
	scratch := filepath.Join(dir, "cwd")
	for _, d := range []string{rootDir, scratch} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	c.kubeletConfig = filepath.Join(dir, "config.yaml")
	cfg := strings.Replace(kubetest.KubeletConfig(c.node, kubetest.FreePort(t), ""),
		"containerRuntimeEndpoint: "+c.node.Endpoint(), "containerRuntimeEndpoint: unix://"+c.socket, 1)
	if err := os.WriteFile(c.kubeletConfig, []byte(cfg+kubeletImageGCConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: this one after the kubelet has stopped.
	t.Cleanup(func() {
		kubetest.RemovePods(t, c.node)
		kubetest.RemoveLinks(t, c.node.PodLogsDir())
		kubetest.UnmountUnder(t, rootDir)
	})
	c.kubeletStarted = time.Now()
	c.kubeletLog = filepath.Join(scratch, "kubelet.log")
	kcmd := kubetest.StartProcessCmd(t, c.kubeletLog, kubelet,
		"--config="+c.kubeletConfig, "--root-dir="+rootDir,
		"--kubeconfig="+c.cp.kubeconfig(t, "kubelet", kubeletToken),
		"--hostname-override="+c.nodeName, "--v=2",
		// Its own container GC's removals, to tell them from the agent's,
		// and each of its image GCs that succeeded (kubelet.go).
		"--vmodule=kuberuntime_gc=4,kubelet=4")
	c.kubeletPID = kcmd.Process.Pid
	if !kubetest.WaitFor(3*time.Minute, func() bool {
		n, err := c.cs.CoreV1().Nodes().Get(t.Context(), c.nodeName, metav1.GetOptions{})
		return err == nil && condition(n.Status.Conditions, corev1.NodeReady)
	}) {
		t.Fatalf("node %s not Ready; kubelet log:\n%s", c.nodeName, kubetest.Tail(filepath.Join(scratch, "kubelet.log"), 40))
	}
	// The kubelet has read its config (image GC at its default band, 85
	// and 80 %; see kubeletImageGCConfig). The file now gets the band the agent reads when its pod
	// starts, as it reads a node's, and acts imageGCMargin points below:
	// the kubelet's own image GC (at its start, then every 5 minutes)
	// reaches 85 % only in TestAgentActsBeforeTheKubeletsImageGC, where
	// the agent has acted first, and in TestBothAtOneBand, so elsewhere
	// every image that goes is the agent's doing and in its journal.
	c.kubeletConfigText = cfg
	c.writeKubeletBand(t, imageGCHigh+imageGCMargin, imageGCLow+imageGCMargin)
	return c
}

// kubeletImageGCConfig is what the kubelet's config says of its image GC
// and eviction at the kubelet's start, and no longer once the agent's
// band is written (writeKubeletBand). Its image GC may remove an image a
// second old (a test's images are minutes old at most; 1s, since the
// kubelet reads 0s as its default, 2 minutes), and its eviction manager,
// whose default imagefs.available threshold of 15 % is the same 85 %,
// acts only when the image filesystem is full: its image GC is the one
// collector of the kubelet's that TestBothAtOneBand meets.
const kubeletImageGCConfig = `imageMinimumGCAge: 1s
evictionHard:
  imagefs.available: "1%"
`

// writeKubeletBand writes the kubelet's config file with the image GC
// band high/low for the agent to read at its start; the kubelet, which
// read the file at its own, keeps 85/80. (The agent's minimum image age
// is its flag's, 0 s: see patch.)
func (c *cluster) writeKubeletBand(t testing.TB, high, low int) {
	t.Helper()
	band := fmt.Sprintf("imageGCHighThresholdPercent: %d\nimageGCLowThresholdPercent: %d\n", high, low)
	if err := os.WriteFile(c.kubeletConfig, []byte(c.kubeletConfigText+band), 0o600); err != nil {
		t.Fatal(err)
	}
}

func condition(conds []corev1.NodeCondition, typ corev1.NodeConditionType) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// applyDeploy renders deploy/ with kubectl kustomize, points the
// DaemonSet at this node's paths and the imported image, and applies it
// with kubectl through the API server. It returns the metrics port.
func (c *cluster) applyDeploy(t testing.TB) int {
	t.Helper()
	kubectl := kubetest.Binary(t, "kubectl")
	out, err := exec.Command(kubectl, "kustomize", "../../deploy").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	port := kubetest.FreePort(t)
	var docs [][]byte
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind == "DaemonSet" {
			var ds appsv1.DaemonSet
			if err := yaml.UnmarshalStrict(doc, &ds); err != nil {
				t.Fatal(err)
			}
			c.patch(t, &ds, port)
			if doc, err = yaml.Marshal(&ds); err != nil {
				t.Fatal(err)
			}
		}
		docs = append(docs, doc)
	}
	manifest := filepath.Join(c.dir, "deploy.yaml")
	if err := os.WriteFile(manifest, bytes.Join(docs, []byte("\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	apply := exec.Command(kubectl, "--kubeconfig="+c.cp.Admin, "apply", "-f", manifest)
	if b, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, b)
	}
	return port
}

// patch changes what differs on this test node from a kubeadm node: where
// the runtime, the kubelet config, the pod logs and the image fs are, the
// image (imported, never pulled), a free metrics port (another agent may
// hold 1017 on this machine), and the API server's address (no
// kube-proxy serves the kubernetes Service here).
func (c *cluster) patch(t testing.TB, ds *appsv1.DaemonSet, port int) {
	t.Helper()
	spec := &ds.Spec.Template.Spec
	ctr := &spec.Containers[0]
	ctr.Image, ctr.ImagePullPolicy = imageRef, corev1.PullNever
	for i, a := range ctr.Args {
		if strings.HasPrefix(a, "--metrics-bind-address=") {
			ctr.Args[i] = fmt.Sprintf("--metrics-bind-address=:%d", port)
		}
	}
	// A test's images are seconds old when a pass should remove them: the
	// agent takes no minimum age. Only the flag can say 0 s; in the
	// kubelet's file a zero is its default, 2 minutes, as the kubelet
	// reads it. A test's own args (setAgentArgs) come after and win.
	ctr.Args = append(ctr.Args, "--minimum-image-ttl-duration=0s")
	ctr.Args = append(ctr.Args, c.agentArgs...)
	// The agent believes a kubelet only where it runs on the host: in the
	// host's PID namespace with the host's root directory, which it reads
	// as process 1's. Where process 1 cannot be inspected (a VM whose init
	// is no one's to read, as this project's CI), the agent's own root
	// stands for the host's, and in its container that is the image's, so
	// it rightly ignores the kubelet this test started. The operator of
	// such a node names the kubelet with --kubelet-pid, as this does; on a
	// real node /proc/1 is readable with SYS_PTRACE and the flag is not
	// needed.
	if _, err := os.Stat("/proc/1/root"); err != nil {
		t.Logf("process 1's root cannot be read (%v): the agent is given --kubelet-pid=%d", err, c.kubeletPID)
		ctr.Args = append(ctr.Args, "--kubelet-pid="+strconv.Itoa(c.kubeletPID))
	}
	ctr.Ports[0].ContainerPort = int32(port)
	ctr.Env = append(ctr.Env,
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(c.cp.Port)})
	socket := corev1.HostPathSocket
	paths := map[string]struct {
		path string
		typ  *corev1.HostPathType
	}{
		"cri-socket":     {c.socket, &socket},
		"kubelet-config": {c.kubeletConfig, nil},
		"pod-logs":       {c.node.PodLogsDir(), nil},
		"state":          {filepath.Join(c.dir, "state"), nil},
		"image-fs":       {c.node.Root(), nil},
	}
	mountAt := map[string]string{}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		p, ok := paths[v.Name]
		if !ok {
			continue
		}
		v.HostPath.Path = p.path
		if p.typ != nil {
			v.HostPath.Type = p.typ
		}
		if v.Name != "state" { // the agent's --state-dir stays /var/lib/nodegc
			mountAt[v.Name] = p.path
		}
	}
	for i := range ctr.VolumeMounts {
		if p, ok := mountAt[ctr.VolumeMounts[i].Name]; ok {
			ctr.VolumeMounts[i].MountPath = p
		}
	}
}

// TestDaemonSetBecomesReady: deploy/ applied through the API server, the
// DaemonSet controller creates the agent's pod, the scheduler binds it to
// the node, the kubelet runs the imported image, and the pod becomes
// Ready: /readyz answers 200 only when the runtime answers, the state dir
// is writable and the pod source (in-cluster, with deploy/'s RBAC) has
// synced. The API server's proxy reaches its metrics. Killed with SIGKILL,
// the agent is restarted by the kubelet and is Ready again.
func TestDaemonSetBecomesReady(t *testing.T) {
	c := sharedCluster(t)
	port := c.port
	pod := c.waitAgentReady(t)
	if pod.Spec.NodeName != c.nodeName {
		t.Errorf("pod on node %q, want %s", pod.Spec.NodeName, c.nodeName)
	}
	// The DaemonSet controller counts the pod Ready a moment after the
	// kubelet reports it.
	var ds *appsv1.DaemonSet
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		var err error
		if ds, err = c.cs.AppsV1().DaemonSets("nodegc").Get(t.Context(), "nodegc", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if ds.Status.NumberReady == 1 || time.Now().After(deadline) {
			break
		}
	}
	if ds.Status.NumberReady != 1 || ds.Status.DesiredNumberScheduled != 1 {
		t.Errorf("DaemonSet status %+v", ds.Status)
	}
	body, err := c.cs.CoreV1().Pods("nodegc").ProxyGet("http", pod.Name, strconv.Itoa(port), "/metrics", nil).DoRaw(t.Context())
	if err != nil {
		t.Errorf("metrics through the API server's proxy: %v", err)
	} else if !bytes.Contains(body, []byte(`nodegc_build_info{goversion=`)) || !bytes.Contains(body, []byte("nodegc_pod_source_synced 1")) {
		t.Errorf("metrics through the proxy lack build info or a synced pod source:\n%.2000s", body)
	}
	if !t.Failed() {
		c.killAgent(t, pod.Name)
	}
	if logs := c.agentLog(); testing.Verbose() || t.Failed() {
		t.Logf("agent log:\n%s", logs)
	}
	if t.Failed() {
		c.dump(t, &pod)
	}
}

// waitAgentReady waits until the DaemonSet's one pod is Ready and returns
// it; a container that keeps exiting fails at once.
func (c *cluster) waitAgentReady(t *testing.T) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	crashed := false
	if !kubetest.WaitFor(4*time.Minute, func() bool {
		pods, err := c.cs.CoreV1().Pods("nodegc").List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nodegc"})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0]
		if cs := pod.Status.ContainerStatuses; len(cs) == 1 && cs[0].RestartCount >= 2 {
			crashed = true
			return true
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}) {
		c.dump(t, &pod)
		t.Fatalf("the agent's pod is not Ready")
	}
	if crashed {
		c.dump(t, &pod)
		t.Fatalf("the agent's container keeps exiting")
	}
	return pod
}

// killAgent SIGKILLs the agent's process (as the OOM killer would) and
// waits until the kubelet has restarted it and the pod is Ready again.
func (c *cluster) killAgent(t *testing.T, podName string) {
	t.Helper()
	pid := c.agentPID(t)
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmRSS:") || strings.HasPrefix(line, "VmHWM:") {
				t.Logf("agent (pid %d) %s", pid, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill agent pid %d: %v", pid, err)
	}
	if !kubetest.WaitFor(2*time.Minute, func() bool {
		pod, err := c.cs.CoreV1().Pods("nodegc").Get(t.Context(), podName, metav1.GetOptions{})
		if err != nil || len(pod.Status.ContainerStatuses) != 1 {
			return false
		}
		st := pod.Status.ContainerStatuses[0]
		return st.RestartCount >= 1 && st.Ready
	}) {
		t.Errorf("the agent killed with SIGKILL was not restarted and Ready again within 2 minutes")
		return
	}
	if next := c.agentPID(t); next == pid {
		t.Errorf("the agent's pid is still %d", pid)
	}
}

// agentPID is the host pid of the agent's running container, from CRI.
func (c *cluster) agentPID(t *testing.T) int {
	t.Helper()
	rt := c.node.RuntimeClient()
	list, err := rt.ListContainers(t.Context(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.container.name": "nodegc"},
	}})
	if err != nil || len(list.GetContainers()) != 1 {
		t.Fatalf("the agent's running container: %v (%d found)", err, len(list.GetContainers()))
	}
	st, err := rt.ContainerStatus(t.Context(), &runtimeapi.ContainerStatusRequest{ContainerId: list.GetContainers()[0].GetId(), Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Pid int }
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("the agent container's pid: %v in %.300s", err, st.GetInfo()["info"])
	}
	return info.Pid
}

// agentLog is the agent container's latest log file.
func (c *cluster) agentLog() string {
	logs, _ := filepath.Glob(filepath.Join(c.node.PodLogsDir(), "nodegc_*", "nodegc", "*.log"))
	if len(logs) == 0 {
		return "(no log)"
	}
	return kubetest.Tail(logs[len(logs)-1], 30)
}

// dump logs the pod's status, the namespace's events and the agent's log.
func (c *cluster) dump(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if b, err := yaml.Marshal(pod.Status); err == nil {
		t.Logf("pod %s status:\n%s", pod.Name, b)
	}
	if evs, err := c.cs.CoreV1().Events("nodegc").List(t.Context(), metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			t.Logf("event %s %s: %s", e.InvolvedObject.Kind, e.Reason, e.Message)
		}
	}
	t.Logf("agent log:\n%s", c.agentLog())
}
