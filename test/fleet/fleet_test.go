package fleet

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/kubetest"
)

// TestFleetWatch writes Nodes and NodeGC objects into a real
// kube-apiserver as agents would, and reads them with `nodegc fleet`: a
// fresh object is ok, one whose heartbeat is past three periods stale, a
// node without one has no agent, and an object no agent would write is an
// error on its row alone. On the screen, a status written reaches the
// row through the watch; a watch whose connection breaks is resumed, and
// the screen says so, then shows the next write.
func TestFleetWatch(t *testing.T) {
	api, cs, dyn, bin := fleetAPI(t, true)
	now := time.Now()
	fresh := status(now, 42, 3)
	bad := status(now, 50, 1)
	bad.Band.Low, bad.Band.High = 90, 50
	writeObject(t, dyn, "node-fresh", createNode(t, cs, "node-fresh"), fresh)
	writeObject(t, dyn, "node-stale", createNode(t, cs, "node-stale"), status(now.Add(-fleet.StaleAfter-time.Minute), 60, 2))
	writeObject(t, dyn, "node-bad", createNode(t, cs, "node-bad"), bad)
	createNode(t, cs, "node-none")
	setReady(t, cs, "node-fresh", corev1.ConditionTrue, false)
	setReady(t, cs, "node-stale", corev1.ConditionFalse, true)

	t.Run("-o json: ok, stale, no agent, and an error on the bad object's row alone", func(t *testing.T) {
		rows := fleetJSON(t, bin, api.Admin)
		for name, want := range map[string]struct {
			state fleet.State
			err   string
		}{
			"node-fresh": {fleet.OK, ""},
			"node-stale": {fleet.Stale, "no heartbeat since"},
			"node-none":  {fleet.NoAgent, ""},
			"node-bad":   {fleet.Failed, "status.band.low 90 above high 50"},
		} {
			r, ok := rows[name]
			if !ok || r.State != want.state || !strings.Contains(r.Err, want.err) {
				t.Errorf("%s: %+v, want state %q with error %q", name, r, want.state, want.err)
			}
		}
		if len(rows) != 4 {
			t.Errorf("%d rows, want 4", len(rows))
		}
		// The Ready condition, as kubectl get nodes prints it.
		for name, want := range map[string]string{"node-fresh": "Ready", "node-stale": "NotReady,SchedulingDisabled", "node-none": "Unknown"} {
			if got := rows[name].Ready; got != want {
				t.Errorf("%s: ready %q, want %q", name, got, want)
			}
		}
		if s := rows["node-fresh"].Status; s == nil || s.ImageFs == nil || s.ImageFs.UsagePercent != 42 || *s.DeadContainers != 3 {
			t.Errorf("node-fresh's status %+v, want the one written", s)
		}
	})

	t.Run("the screen follows the watch, and says when it broke and resumed", func(t *testing.T) {
		p := startProxy(t, strings.TrimPrefix(api.URL, "https://"))
		kc := kubetest.TokenKubeconfig(t, t.TempDir(), "https://"+p.addr, api.CAFile, "viaproxy", kubetest.AdminToken)
		s := newScreen(t, 200, 20, []string{"TERM=xterm-256color", "KUBECONFIG=" + kc}, bin, "fleet", "--refresh", "1h")
		s.waitFor(t, "the four rows", time.Minute, func(sc string) bool {
			return strings.Contains(sc, "4 nodes · 1 agents ok · 3 not ready · 1 stale · 1 error · 1 no agent")
		})
		// The refresh is an hour: what changes on the screen came by the
		// watch.
		write := func(dead int32) {
			t.Helper()
			updateStatus(t, dyn, "node-fresh", "", status(time.Now(), 42, dead))
			s.waitFor(t, "the status written, on node-fresh's row", time.Minute, func(sc string) bool {
				return rowHas(sc, "node-fresh", strconv.Itoa(int(dead)))
			})
		}
		write(4242)
		// A Node's Ready condition reaches its row by the nodes' watch
		// (its events after the first carry no column definitions).
		setReady(t, cs, "node-fresh", corev1.ConditionFalse, false)
		s.waitFor(t, "node-fresh not ready", time.Minute, func(sc string) bool { return rowHas(sc, "node-fresh", "NotReady") })
		setReady(t, cs, "node-fresh", corev1.ConditionTrue, false)
		s.waitFor(t, "node-fresh ready again", time.Minute, func(sc string) bool {
			return rowHas(sc, "node-fresh", "Ready") && !rowHas(sc, "node-fresh", "NotReady")
		})
		p.cut()
		s.waitFor(t, "the broken watch", 2*time.Minute, func(sc string) bool {
			return strings.Contains(sc, "broken since") && strings.Contains(sc, "resuming")
		})
		p.restore(t)
		s.waitFor(t, "the resumed watch", 2*time.Minute, func(sc string) bool {
			return strings.Contains(sc, "watch resumed") && !strings.Contains(sc, "broken since")
		})
		write(4343)
	})
}

// rowHas reports whether the screen's line of node holds want.
func rowHas(screen, node, want string) bool {
	for line := range strings.Lines(screen) {
		if strings.Contains(line, node+" ") && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

// TestFleetBadInput: the NodeGC resource missing, or a right missing, is
// one line naming what to do (kubectl apply -k deploy/) or the verb and
// resource, and exit 2; nothing is drawn.
func TestFleetBadInput(t *testing.T) {
	api := kubetest.StartAPIServer(t, kubetest.APIServerOptions{Tokens: map[string]string{"nobody-token": "nobody,nobody,people"}})
	cs := api.Client(t)
	bin := buildNodegc(t, t.TempDir())
	run := func(kubeconfig string) (int, []string) {
		cmd := exec.Command(bin, "fleet", "--kubeconfig", kubeconfig)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, strings.Split(strings.TrimSpace(stderr.String()), "\n")
	}
	expect := func(t *testing.T, kubeconfig, want string) {
		t.Helper()
		// RBAC changes reach the API server's authorizer within moments.
		var code int
		var lines []string
		if !kubetest.WaitFor(30*time.Second, func() bool {
			code, lines = run(kubeconfig)
			return code == 2 && len(lines) == 1 && strings.Contains(lines[0], want)
		}) {
			t.Fatalf("exit %d, stderr %q; want exit 2 and one line naming %q", code, lines, want)
		}
	}
	t.Run("the NodeGC resource missing names kubectl apply -k deploy/", func(t *testing.T) {
		expect(t, api.Admin, "the NodeGC resource is not installed: run kubectl apply -k deploy/")
	})
	applyCRD(t, api)
	nobody := api.Kubeconfig(t, "nobody", "nobody-token")
	for _, step := range []struct {
		name, want string
		grant      rbacv1.PolicyRule
	}{
		{"list-nodes", "may not list nodes", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}},
		{"watch-nodes", "may not watch nodes", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"watch"}}},
		{"list-nodegcs", "may not list nodegcs.nodegc.io", rbacv1.PolicyRule{APIGroups: []string{"nodegc.io"}, Resources: []string{"nodegcs"}, Verbs: []string{"list"}}},
		{"watch-nodegcs", "may not watch nodegcs.nodegc.io", rbacv1.PolicyRule{APIGroups: []string{"nodegc.io"}, Resources: []string{"nodegcs"}, Verbs: []string{"watch"}}},
	} {
		t.Run("without "+step.name+" the line names it", func(t *testing.T) {
			expect(t, nobody, step.want)
		})
		grant(t, cs, "nobody", "nobody-"+step.name, step.grant)
	}
	t.Run("with list and watch on both it reads", func(t *testing.T) {
		if !kubetest.WaitFor(30*time.Second, func() bool {
			code, _ := run(nobody)
			return code == 0
		}) {
			code, lines := run(nobody)
			t.Fatalf("exit %d, stderr %q; want 0", code, lines)
		}
	})
}
