package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/proctest"
)

// repoFile is a file of the repository, from this package's directory.
func repoFile(t testing.TB, rel string) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", rel)
}

// fleetAPI starts a kube-apiserver with the NodeGC CRD and builds nodegc,
// for a test that drives the fleet view: the server, its clients (typed
// and dynamic, as the admin) and the binary. Without tmux (withTmux) it
// skips, or fails in CI.
func fleetAPI(t *testing.T, withTmux bool) (*kubetest.APIServer, *kubernetes.Clientset, *dynamic.DynamicClient, string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); withTmux && err != nil {
		kubetest.SkipOrFail(t, "tmux not installed (make deps installs it)")
	}
	api := kubetest.StartAPIServer(t, kubetest.APIServerOptions{})
	applyCRD(t, api)
	return api, api.Client(t), dynClient(t, api.Admin), buildNodegc(t, t.TempDir())
}

// applyCRD applies deploy/crd.yaml with kubectl and waits until the API
// server serves nodegcs.
func applyCRD(t testing.TB, api *kubetest.APIServer) {
	t.Helper()
	kubectl := kubetest.Binary(t, "kubectl")
	if out, err := exec.Command(kubectl, "--kubeconfig", api.Admin, "apply", "-f", repoFile(t, "deploy/crd.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply deploy/crd.yaml: %v: %s", err, out)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", api.Admin, "wait", "--for=condition=Established", "--timeout=60s", "crd/nodegcs.nodegc.io").CombinedOutput(); err != nil {
		t.Fatalf("kubectl wait for the CRD: %v: %s", err, out)
	}
	dyn := dynClient(t, api.Admin)
	if !kubetest.WaitFor(time.Minute, func() bool {
		_, err := dyn.Resource(fleet.ObjectsResource).List(t.Context(), metav1.ListOptions{Limit: 1})
		return err == nil
	}) {
		t.Fatalf("the API server does not serve %s", fleet.ObjectsResource)
	}
}

// dynClient is an unthrottled dynamic client of the kubeconfig.
func dynClient(t testing.TB, kubeconfig string) *dynamic.DynamicClient {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// buildNodegc builds the nodegc binary into dir.
func buildNodegc(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "nodegc")
	cmd := exec.Command("go", "build", "-o", out, "github.com/nodegc/nodegc/cmd/nodegc")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build nodegc: %v: %s", err, b)
	}
	return out
}

// createNode creates a Node and returns its UID, for its object's owner.
func createNode(t testing.TB, cs *kubernetes.Clientset, name string) types.UID {
	return createNodeWith(t, cs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// createReadyNode creates a Node whose kubelet reports it Ready, as a
// kubelet registers it (a Node's status may be set at its creation).
func createReadyNode(t testing.TB, cs *kubernetes.Clientset, name string) types.UID {
	return createNodeWith(t, cs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}})
}

func createNodeWith(t testing.TB, cs *kubernetes.Clientset, n *corev1.Node) types.UID {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return node.UID
}

// setReady writes the Node's Ready condition (as its kubelet does) and
// cordons it or not.
func setReady(t testing.TB, cs *kubernetes.Clientset, name string, ready corev1.ConditionStatus, cordon bool) {
	t.Helper()
	nodes := cs.CoreV1().Nodes()
	n, err := nodes.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Spec.Unschedulable != cordon {
		n.Spec.Unschedulable = cordon
		if n, err = nodes.Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Test",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := nodes.UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// status is an agent's status with a heartbeat at beat, its image fs at
// usage percent and dead containers.
func status(beat time.Time, usage, dead int32) v1alpha1.NodeGCStatus {
	hb := metav1.NewTime(beat)
	return v1alpha1.NodeGCStatus{Version: "test", HeartbeatTime: &hb, Band: v1alpha1.Band{High: 85, Low: 80},
		ImageFs:        &v1alpha1.ImageFs{CapacityBytes: 100 << 30, AvailableBytes: int64(100-usage) << 30, UsagePercent: usage},
		DeadContainers: &dead, PodSource: "synced", EventStream: "live",
		Kept: map[string]int32{"in-use": 3}}
}

// writeObject creates node's NodeGC object, owned by the node, with st
// as its status (created, then its status written, as an agent does).
func writeObject(t testing.TB, dyn dynamic.Interface, node string, uid types.UID, st v1alpha1.NodeGCStatus) {
	t.Helper()
	n := &v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: node,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: uid}}}}
	u, err := v1alpha1.ToUnstructured(n)
	if err != nil {
		t.Fatal(err)
	}
	created, err := dyn.Resource(fleet.ObjectsResource).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create NodeGC %s: %v", node, err)
	}
	updateStatus(t, dyn, node, created.GetResourceVersion(), st)
}

// updateStatus writes node's object's status (at version rv, or the
// latest when rv is "").
func updateStatus(t testing.TB, dyn dynamic.Interface, node, rv string, st v1alpha1.NodeGCStatus) {
	t.Helper()
	if err := putStatus(t, dyn, node, rv, st); err != nil {
		t.Fatal(err)
	}
}

// putStatus is updateStatus that returns its error.
func putStatus(t testing.TB, dyn dynamic.Interface, node, rv string, st v1alpha1.NodeGCStatus) error {
	res := dyn.Resource(fleet.ObjectsResource)
	if rv == "" {
		cur, err := res.Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get NodeGC %s: %w", node, err)
		}
		rv = cur.GetResourceVersion()
	}
	u, err := v1alpha1.ToUnstructured(&v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: node, ResourceVersion: rv}, Status: st})
	if err != nil {
		return err
	}
	if _, err := res.UpdateStatus(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update the status of NodeGC %s: %w", node, err)
	}
	return nil
}

// fleetJSON runs `nodegc fleet -o json` and returns its rows by name.
func fleetJSON(t testing.TB, bin, kubeconfig string) map[string]fleet.Node {
	t.Helper()
	out, err := exec.Command(bin, "fleet", "-o", "json", "--kubeconfig", kubeconfig).Output()
	if err != nil {
		t.Fatalf("nodegc fleet -o json: %v (%s)", err, stderrOf(err))
	}
	var rows []fleet.Node
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("nodegc fleet -o json: %v: %s", err, out)
	}
	byName := map[string]fleet.Node{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	return byName
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// grant binds a ClusterRole of the rule to user.
func grant(t testing.TB, cs *kubernetes.Clientset, user, name string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// screen is a private tmux server running one program in a pane of a
// fixed size; t.Cleanup ends it.
type screen struct{ sock string }

func newScreen(t testing.TB, w, h int, env []string, argv ...string) *screen {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &screen{sock: proctest.TmuxSocket(t)}
	args := []string{"-f", conf, "new-session", "-d", "-s", "f", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "--", "env"}
	proctest.Tmux(t, s.sock, append(append(args, env...), argv...)...)
	return s
}

func (s *screen) capture(t testing.TB) string {
	return proctest.Tmux(t, s.sock, "capture-pane", "-p", "-t", "f")
}

func (s *screen) press(t testing.TB, keys ...string) {
	proctest.Tmux(t, s.sock, append([]string{"send-keys", "-t", "f"}, keys...)...)
}

// waitFor polls the screen every few milliseconds until ok, or fails
// with it after d; it returns the screen and when ok first held.
func (s *screen) waitFor(t testing.TB, what string, d time.Duration, ok func(string) bool) (string, time.Time) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		sc := s.capture(t)
		if ok(sc) {
			return sc, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not on the screen after %s:\n%s", what, d, sc)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// proxy is a TCP relay to the API server that a test can cut (every
// connection closed, new ones refused) and restore on the same port: a
// network that breaks under a watch.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]struct{}
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	p := &proxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.relay(c)
		}
	}()
}

func (p *proxy) relay(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// cut closes the listener and every connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// restore listens again on the same address.
func (p *proxy) restore(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}
