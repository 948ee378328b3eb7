package fleet

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/proctest"
	tuifleet "github.com/nodegc/nodegc/tui/fleet"
)

// The simulated nodes' network: a bridge with the first address of a
// /16 of 198.18.0.0/15 (RFC 2544's benchmarking range: global unicast to
// the API server, never routed beyond this machine), and each node's
// namespace on it with an address of its own.
const (
	subnetPrefix = "198.18."
	bridgeIP     = "198.18.0.1"
	agentPort    = 1017
	agentsPerSim = 10
)

// nodeCount is NODEGC_FLEET_NODES, default 100.
func nodeCount(t *testing.T) int {
	n := 100
	if v := os.Getenv("NODEGC_FLEET_NODES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 || n > 60000 {
			t.Fatalf("NODEGC_FLEET_NODES=%q: want a number from 2 to 60000", v)
		}
	}
	return n
}

// nodeIP is node i's address (i from 0).
func nodeIP(i int) string { return fmt.Sprintf("%s%d.%d", subnetPrefix, 1+i/250, 2+i%250) }

// run runs a command and fails the test on an error.
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// network makes the bridge; t.Cleanup removes it. It refuses to run
// where 198.18.0.0/16 is already in use.
func network(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-4", "-o", "addr").Output()
	if err != nil {
		kubetest.SkipOrFail(t, "ip(8): %v", err)
	}
	if strings.Contains(string(out), " "+subnetPrefix) {
		t.Fatalf("an interface already has an address in %s0.0/16; the test uses that range", subnetPrefix)
	}
	br := fmt.Sprintf("nf%dbr", os.Getpid())
	run(t, "ip", "link", "add", br, "type", "bridge")
	t.Cleanup(func() { exec.Command("ip", "link", "del", br).Run() })
	run(t, "ip", "addr", "add", bridgeIP+"/16", "dev", br)
	run(t, "ip", "link", "set", br, "up")
	return br
}

// namespace makes node i's network namespace, with a veth pair to the
// bridge and the node's address; t.Cleanup removes it (and the pair).
func namespace(t *testing.T, br string, i int) string {
	t.Helper()
	ns := fmt.Sprintf("nodegc-fleet-%d-%d", os.Getpid(), i)
	host := fmt.Sprintf("nf%d-%d", os.Getpid(), i)
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", ns).Run()
		// The pair goes with the namespace, but only once the kernel lets
		// go of it (a socket still closing holds it): remove our end now.
		exec.Command("ip", "link", "del", host).Run()
	})
	run(t, "ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns)
	run(t, "ip", "link", "set", host, "master", br, "up")
	run(t, "ip", "-n", ns, "addr", "add", nodeIP(i)+"/16", "dev", "eth0")
	run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	return ns
}

// buildNodegc builds the nodegc binary into dir.
func buildNodegc(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "nodegc")
	cmd := exec.Command("go", "build", "-o", out, "github.com/nodegc/nodegc/cmd/nodegc")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build nodegc: %v: %s", err, b)
	}
	return out
}

// simNode is one simulated node: its Node and Pod objects, and its
// agent's process.
type simNode struct {
	name  string
	ip    string
	agent *exec.Cmd
}

// TestFleetAtScale puts many simulated nodes behind one kube-apiserver,
// each with its agent in a network namespace, plus one node without an
// agent, and reads the fleet through the API server's pods proxy: every
// agent answers, the node without one is listed as such, and an agent
// that stops answering (SIGSTOP) shows as such while every other row
// still comes. It logs the benchmark's figures.
func TestFleetAtScale(t *testing.T) {
	if os.Geteuid() != 0 {
		kubetest.SkipOrFail(t, "network namespaces need root (running as uid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		kubetest.SkipOrFail(t, "ip(8) not installed")
	}
	n := nodeCount(t)
	dir, err := os.MkdirTemp("", "nodegc-fleet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := buildNodegc(t, dir)
	br := network(t)
	api := kubetest.StartAPIServer(t, kubetest.APIServerOptions{Bind: bridgeIP,
		Tokens: map[string]string{"viewer-token": "viewer,viewer,people"}})
	cs := api.Client(t)
	ctx := t.Context()

	idle := sampleAPIServer(t, api, 10*time.Second)
	idle.watches = podWatches(t, api)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleet.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager makes the namespace's default ServiceAccount,
	// which the ServiceAccount admission plugin looks up.
	if _, err := cs.CoreV1().ServiceAccounts(fleet.DefaultNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The simulated runtimes: one static simnode serves agentsPerSim
	// agents (their passes are an hour apart, so none removes anything).
	sims := make([]string, (n+agentsPerSim-1)/agentsPerSim)
	for k := range sims {
		sims[k] = "unix://" + filepath.Join(dir, fmt.Sprintf("sim-%d.sock", k))
		kubetest.StartProcess(t, filepath.Join(dir, fmt.Sprintf("sim-%d.log", k)), bin, "simnode", "--listen", sims[k],
			"--images", "30", "--pods", "8", "--dead-per-container", "2", "--seed", strconv.Itoa(k+1))
	}
	started := time.Now()
	nodes := make([]simNode, n)
	for i := range nodes {
		sn := &nodes[i]
		sn.name, sn.ip = fmt.Sprintf("sim-%04d", i), nodeIP(i)
		createNode(t, cs, sn.name)
		ns := namespace(t, br, i)
		// Each agent stands for the agent of a node of its own, whose
		// runtime no other node's agent removes from; here agentsPerSim
		// of them share one simulated runtime's socket, so each gets a
		// runtime lock dir of its own (engine.RuntimeLockDirEnv), as
		// each node has its own /var/lib/nodegc/runtimes. With one shared
		// dir, every agent but the first would rightly exit 2: one
		// deleting engine per runtime.
		locks := filepath.Join(dir, sn.name+"-runtimes")
		sn.agent = kubetest.StartProcessCmd(t, filepath.Join(dir, sn.name+".log"), "ip", "netns", "exec", ns,
			"env", engine.RuntimeLockDirEnv+"="+locks, bin, "agent", "--simulated", "--runtime-endpoint", sims[i/agentsPerSim], "--state-dir", filepath.Join(dir, sn.name),
			"--kubelet-config", os.DevNull, "--kubelet-pid", "-1", "--kubeconfig", api.Admin, "--node-name", sn.name,
			"--metrics-bind-address", net.JoinHostPort(sn.ip, strconv.Itoa(agentPort)), "--log-level", "warn",
			"--image-gc-period", "1h", "--container-gc-period", "1h")
		createAgentPod(t, cs, sn.name, sn.ip)
	}
	createNode(t, cs, "sim-noagent")
	t.Logf("%d nodes, namespaces and agents created in %s", n, time.Since(started).Round(time.Millisecond))

	reader := fleet.NewReader(fleet.Options{Client: userClient(t, api.Admin)})
	var rows []fleet.Node
	if !kubetest.WaitFor(5*time.Minute, func() bool {
		rows, err = reader.Read(ctx)
		return err == nil && count(rows, fleet.OK) == n
	}) {
		t.Fatalf("agents answering: %d of %d (err %v); first rows not ok: %v", count(rows, fleet.OK), n, err, notOK(rows, 3))
	}
	t.Logf("every agent answered %s after the first was started", time.Since(started).Round(time.Millisecond))
	if len(rows) != n+1 {
		t.Fatalf("%d rows, want %d nodes and the one without an agent", len(rows), n+1)
	}
	if i := slices.IndexFunc(rows, func(r fleet.Node) bool { return r.Name == "sim-noagent" }); i < 0 || rows[i].State != fleet.NoAgent {
		t.Errorf("the node without an agent: %+v, want state %q", rows, fleet.NoAgent)
	}
	for _, r := range rows {
		if r.State == fleet.OK && (r.Summary == nil || r.Summary.Node != r.Name || r.Summary.UsagePercent < 0 || r.Summary.DeadContainers < 0) {
			t.Fatalf("row %s: summary %+v, want the agent of this node with its image fs and dead containers", r.Name, r.Summary)
		}
	}

	benchmark(t, reader, api, n, idle)

	t.Run("a command through the API server needs update on the node in nodes.nodegc.io", func(t *testing.T) {
		target := rows[0]
		// viewer may reach the agent through the proxy and look, not act.
		grant(t, cs, "viewer", "viewer-proxy", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/proxy"}, Verbs: []string{"get", "create"}})
		viewer := remoteClient(t, api, target, "viewer-token")
		if _, err := viewer.AgentStatus(ctx); !isStatus(err, 403) {
			t.Fatalf("viewer without get on nodes.nodegc.io: status %v, want 403 from the agent", err)
		}
		grant(t, cs, "viewer", "viewer-get", rbacv1.PolicyRule{APIGroups: []string{"nodegc.io"}, Resources: []string{"nodes"}, Verbs: []string{"get"}})
		var st control.Status
		if !kubetest.WaitFor(30*time.Second, func() bool {
			st, err = viewer.AgentStatus(ctx)
			return err == nil
		}) {
			t.Fatalf("viewer with get: %v", err)
		}
		if !st.ReadOnly {
			t.Errorf("viewer's status is not read-only")
		}
		if _, err := viewer.Force(ctx, engine.PassContainers); !isStatus(err, 403) {
			t.Errorf("viewer's force: %v, want 403 from the agent", err)
		}
		admin := remoteClient(t, api, target, kubetest.AdminToken)
		before := st.Scheduler.Passes
		rep, err := admin.Force(ctx, engine.PassContainers)
		if err != nil || rep.ID == 0 {
			t.Fatalf("admin's force through the API server: %+v, %v", rep.ID, err)
		}
		if st, err := admin.AgentStatus(ctx); err != nil || st.Scheduler.Passes != before+1 || st.ReadOnly {
			t.Errorf("after the forced pass: passes %d (was %d), read-only %v, %v", st.Scheduler.Passes, before, st.ReadOnly, err)
		}
	})
	if shot := os.Getenv("NODEGC_FLEET_SHOT"); shot != "" {
		screenshot(t, bin, api, nodes, reader, shot)
	}

	t.Run("an agent that does not answer shows as such and holds back no other row", func(t *testing.T) {
		stopped := nodes[n/2]
		syscall.Kill(stopped.agent.Process.Pid, syscall.SIGSTOP)
		defer syscall.Kill(stopped.agent.Process.Pid, syscall.SIGCONT)
		rows, err := reader.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			switch {
			case r.Name == stopped.name && r.State != fleet.NoAnswer:
				t.Errorf("stopped agent's row: %s (%s), want %q", r.State, r.Err, fleet.NoAnswer)
			case r.Name != stopped.name && r.Name != "sim-noagent" && r.State != fleet.OK:
				t.Errorf("row %s: %s (%s), want ok", r.Name, r.State, r.Err)
			}
		}
	})
}

// benchmark logs the first read, the refreshes and the render of the
// fleet view, the cost per node and the projection to 5,000 nodes, and
// the API server's cost per agent.
func benchmark(t *testing.T, reader *fleet.Reader, api *kubetest.APIServer, n int, idle apiSample) {
	ctx := t.Context()
	loaded := sampleAPIServer(t, api, 10*time.Second)
	watches := podWatches(t, api)
	t.Logf("API server: %d pod watches before the agents, %d with %d agents; RSS %s → %s (%.1f KiB an agent); CPU %.1f → %.1f ms/s idle (%.3f ms/s an agent)",
		idle.watches, watches, n, mib(idle.rss), mib(loaded.rss), float64(loaded.rss-idle.rss)/1024/float64(n),
		idle.cpuPerSec, loaded.cpuPerSec, (loaded.cpuPerSec-idle.cpuPerSec)/float64(n))

	const refreshes = 10
	var walls []time.Duration
	var cpu time.Duration
	var render time.Duration
	m := tuifleet.New(tuifleet.Options{Read: reader.Read})
	mm, _ := m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	m = mm.(tuifleet.Model)
	for i := range refreshes + 1 {
		c0 := cpuTime()
		start := time.Now()
		rows, err := reader.Read(ctx)
		wall := time.Since(start)
		if err != nil || count(rows, fleet.OK) != n {
			t.Fatalf("read %d: %d ok of %d, %v", i, count(rows, fleet.OK), n, err)
		}
		r0 := time.Now()
		mm, _ := m.Update(tuifleet.ReadMsg{Seq: 1, Nodes: rows, At: time.Now(), Took: wall})
		m = mm.(tuifleet.Model)
		_ = m.Screen()
		rt := time.Since(r0)
		if i == 0 {
			t.Logf("first frame: read %s + render %s", wall.Round(time.Millisecond), rt.Round(time.Microsecond))
			continue
		}
		walls = append(walls, wall+rt)
		render += rt
		cpu += cpuTime() - c0
	}
	slices.Sort(walls)
	med := walls[len(walls)/2]
	perNode := med / time.Duration(n)
	cpuPerNode := cpu / time.Duration(refreshes*n)
	t.Logf("refresh (read + render) of %d nodes over %d refreshes: min %s, median %s, max %s; render %s on average",
		n, refreshes, walls[0].Round(time.Millisecond), med.Round(time.Millisecond), walls[len(walls)-1].Round(time.Millisecond),
		(render / refreshes).Round(time.Microsecond))
	t.Logf("cost per node: %s wall, %s of fleet's CPU a refresh; projection to 5,000 nodes: %s a refresh (linear in nodes, %d agents asked at once)",
		perNode.Round(time.Microsecond), cpuPerNode.Round(time.Microsecond), (perNode * 5000).Round(time.Millisecond), fleet.DefaultParallel)
}

type apiSample struct {
	watches   int
	rss       int64
	cpuPerSec float64 // ms of CPU per second
}

// sampleAPIServer measures the API server's RSS and its CPU over d.
func sampleAPIServer(t *testing.T, api *kubetest.APIServer, d time.Duration) apiSample {
	c0 := procCPU(t, api.PID)
	time.Sleep(d)
	c1 := procCPU(t, api.PID)
	return apiSample{rss: procRSS(t, api.PID), cpuPerSec: float64((c1 - c0).Milliseconds()) / d.Seconds()}
}

// procCPU is a process's user and system time.
func procCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
}

// procRSS is a process's resident set in bytes.
func procRSS(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// cpuTime is this process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// podWatches is the API server's count of open pod watches.
func podWatches(t *testing.T, api *kubetest.APIServer) int {
	b, err := api.Client(t).RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `resource="pods"`) && strings.Contains(line, `verb="WATCH"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += v
		}
	}
	return int(total)
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// createNode creates a Ready Node.
func createNode(t *testing.T, cs *kubernetes.Clientset, name string) {
	t.Helper()
	ctx := t.Context()
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createAgentPod creates the agent's Pod on the node, running at ip, as
// the DaemonSet of deploy/ would (its labels and metrics port), and
// writes its status as the kubelet does once the agent's readiness probe
// passes: running, its container running and ready, the pod Ready (the
// fleet asks no agent whose pod is not). It is written at once, with no
// probe: until the agent listens, the fleet's read of its row fails, and
// the test waits for every row.
func createAgentPod(t *testing.T, cs *kubernetes.Clientset, node, ip string) {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nodegc-" + node, Namespace: fleet.DefaultNamespace, Labels: map[string]string{"app.kubernetes.io/name": "nodegc"}},
		Spec: corev1.PodSpec{NodeName: node, HostNetwork: true, AutomountServiceAccountToken: new(false), Containers: []corev1.Container{{
			Name: "nodegc", Image: "nodegc:test",
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: agentPort}},
		}}},
	}
	pod, err := cs.CoreV1().Pods(fleet.DefaultNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: ip,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "nodegc", Image: "nodegc:test", Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
	if _, err := cs.CoreV1().Pods(fleet.DefaultNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// userClient is nodegc's own API client on the kubeconfig, as nodegc
// fleet builds it.
func userClient(t *testing.T, kubeconfig string) *kubeclient.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	c, err := kubeclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func count(rows []fleet.Node, s fleet.State) int {
	n := 0
	for _, r := range rows {
		if r.State == s {
			n++
		}
	}
	return n
}

func notOK(rows []fleet.Node, max int) []string {
	var out []string
	for _, r := range rows {
		if r.State != fleet.OK && r.Name != "sim-noagent" && len(out) < max {
			out = append(out, r.Name+": "+string(r.State)+" "+r.Err)
		}
	}
	return out
}

// TestFleetWithoutRights: a kubeconfig whose user lacks a right the fleet
// view needs gets one line naming the verb, and exit 2; nothing is drawn.
func TestFleetWithoutRights(t *testing.T) {
	api := kubetest.StartAPIServer(t, kubetest.APIServerOptions{Tokens: map[string]string{"nobody-token": "nobody,nobody,people"}})
	cs := api.Client(t)
	bin := buildNodegc(t, t.TempDir())
	kc := api.Kubeconfig(t, "nobody", "nobody-token")
	fleetRun := func() (int, []string) {
		cmd := exec.Command(bin, "fleet", "--kubeconfig", kc)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, strings.Split(strings.TrimSpace(stderr.String()), "\n")
	}
	if code, lines := fleetRun(); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "may not list nodes") {
		t.Errorf("without any right: exit %d, stderr %q; want exit 2 and one line naming list nodes", code, lines)
	}
	// Allowed to list nodes, not pods.
	grant(t, cs, "nobody", "nobody-nodes", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}})
	if !kubetest.WaitFor(30*time.Second, func() bool {
		code, lines := fleetRun()
		return code == 2 && len(lines) == 1 && strings.Contains(lines[0], "may not list pods in namespace nodegc")
	}) {
		code, lines := fleetRun()
		t.Errorf("with list nodes only: exit %d, stderr %q; want exit 2 and one line naming list pods", code, lines)
	}
}

// grant binds a ClusterRole of the rule to user.
func grant(t *testing.T, cs *kubernetes.Clientset, user, name string, rule rbacv1.PolicyRule) {
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

// remoteClient is a client of the row's agent through the API server's
// pods proxy, sending token as nodegc fleet sends the user's.
func remoteClient(t *testing.T, api *kubetest.APIServer, row fleet.Node, token string) *control.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", api.Kubeconfig(t, "remote", token))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base, err := url.Parse(api.URL + kubeclient.ProxyPath(row.Namespace, row.Pod, row.Port))
	if err != nil {
		t.Fatal(err)
	}
	c := control.NewRemoteClient(headerRT{rt, "Bearer " + token}, base, false)
	t.Cleanup(c.Close)
	return c
}

type headerRT struct {
	rt    http.RoundTripper
	value string
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(control.AuthorizationHeader, h.value)
	return h.rt.RoundTrip(r)
}

func isStatus(err error, code int) bool {
	var re *control.RemoteError
	return errors.As(err, &re) && re.Status == code
}

// screenshot runs nodegc fleet in a tmux pane against the simulated
// fleet and writes the pane, with its colours, to path (for
// scripts/screenshots.sh): a few nodes have had a pass forced through the
// API server, and one agent is stopped, so it shows as not answering.
func screenshot(t *testing.T, bin string, api *kubetest.APIServer, nodes []simNode, reader *fleet.Reader, path string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("NODEGC_FLEET_SHOT: tmux: %v", err)
	}
	rows, err := reader.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r.State != fleet.OK || i%3 != 0 {
			continue
		}
		kind := engine.PassImages
		if i%2 == 0 {
			kind = engine.PassFull
		}
		if _, err := remoteClient(t, api, r, kubetest.AdminToken).Force(t.Context(), kind); err != nil {
			t.Fatalf("force on %s: %v", r.Name, err)
		}
	}
	stopped := nodes[len(nodes)/3].agent.Process.Pid
	syscall.Kill(stopped, syscall.SIGSTOP)
	defer syscall.Kill(stopped, syscall.SIGCONT)
	sock := proctest.TmuxSocket(t)
	tm := func(args ...string) string { return proctest.Tmux(t, sock, args...) }
	tm("new-session", "-d", "-x", "140", "-y", "30", "-s", "shot",
		"env COLORTERM=truecolor TERM=tmux-256color KUBECONFIG="+api.Admin+" "+bin+" fleet; sleep 600")
	tm("set-option", "-t", "shot", "status", "off")
	if !kubetest.WaitFor(time.Minute, func() bool {
		return strings.Contains(tm("capture-pane", "-p", "-t", "shot"), "1 no answer")
	}) {
		t.Fatalf("the fleet view did not show the stopped agent:\n%s", tm("capture-pane", "-p", "-t", "shot"))
	}
	time.Sleep(time.Second)
	if err := os.WriteFile(path, []byte(tm("capture-pane", "-e", "-p", "-t", "shot")), 0o644); err != nil {
		t.Fatal(err)
	}
}
