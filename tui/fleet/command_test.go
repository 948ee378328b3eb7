package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/fleet/fleettest"
)

// commandView is node-d's view with its commands sent through
// fleet.Commands on client-go's fake dynamic client, which holds the
// fixture's objects and names the user alice.
func commandView(t *testing.T) (Model, *fake.FakeDynamicClient) {
	t.Helper()
	var objs []runtime.Object
	for _, n := range fixture() {
		if n.Status == nil {
			continue
		}
		u, err := v1alpha1.ToUnstructured(&v1alpha1.NodeGC{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Status: *n.Status})
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	dyn := fleettest.Client(fleet.ObjectsResource, "alice", objs...)
	clock := func() time.Time { return now }
	var tm tea.Model = New(Options{Now: clock, Node: "node-d", Commands: fleet.CommandsFor(dyn, clock)})
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 220, Height: 40})
	tm, _ = tm.Update(ReadMsg{Nodes: fixture(), At: now})
	return tm.(Model), dyn
}

// hit presses k in m and runs the command it returns (a send), feeding
// its message back.
func hit(t *testing.T, m Model, k string) Model {
	t.Helper()
	msg := tea.KeyPressMsg{Text: k, Code: []rune(k)[0]}
	if k == "esc" {
		msg = tea.KeyPressMsg{Code: tea.KeyEscape}
	}
	tm, cmd := m.Update(msg)
	if cmd != nil {
		tm, _ = tm.Update(cmd())
	}
	return tm.(Model)
}

// withStatus is the fixture with node-d's status changed, as the watch
// brings it.
func withStatus(t *testing.T, m Model, change func(*v1alpha1.NodeGCStatus)) Model {
	t.Helper()
	nodes := fixture()
	change(nodes[3].Status)
	tm, _ := m.Update(ReadMsg{Nodes: nodes, At: now})
	return tm.(Model)
}

func specOf(t *testing.T, dyn *fake.FakeDynamicClient, node string) v1alpha1.NodeGCSpec {
	t.Helper()
	u, err := dyn.Resource(fleet.ObjectsResource).Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := v1alpha1.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return o.Spec
}

func wantScreen(t *testing.T, m Model, what string, parts ...string) {
	t.Helper()
	screen := m.Screen()
	for _, p := range parts {
		if !strings.Contains(screen, p) {
			t.Errorf("%s: the screen lacks %q:\n%s", what, p, screen)
		}
	}
}

// The node view's keys are the node dashboard's: each asks first, naming
// the node and the action, sends nothing until y, and then writes the
// object's spec in the user's name; the acknowledgement and the outcome
// come back from the status.
func TestNodeViewSendsCommands(t *testing.T) {
	t.Run("x asks, esc cancels, y forces a container pass whose outcome is read back", func(t *testing.T) {
		m, dyn := commandView(t)
		m = hit(t, m, "x")
		wantScreen(t, m, "the confirm", "On node node-d: force container GC?", "y sends it")
		m = hit(t, m, "esc")
		if s := specOf(t, dyn, "node-d"); s.Pass != nil || strings.Contains(m.Screen(), "On node") {
			t.Fatalf("esc sent %+v or left the confirm:\n%s", s.Pass, m.Screen())
		}
		m = hit(t, hit(t, m, "x"), "y")
		p := specOf(t, dyn, "node-d").Pass
		if p == nil || p.Kind != "containers" || p.Preview || p.By != "alice" {
			t.Fatalf("spec.pass %+v", p)
		}
		wantScreen(t, m, "sent", "force container GC · sent 12:00:00 as "+p.ID+" · waiting for the agent to acknowledge")
		m = withStatus(t, m, func(s *v1alpha1.NodeGCStatus) {
			s.Command = &v1alpha1.CommandOutcome{ID: p.ID, Result: "running", At: metav1.NewTime(now.Add(-2 * time.Second))}
		})
		wantScreen(t, m, "acknowledged", "acknowledged: running since 2s ago")
		m = withStatus(t, m, func(s *v1alpha1.NodeGCStatus) {
			s.Command = &v1alpha1.CommandOutcome{ID: p.ID, Result: "done", At: metav1.NewTime(now),
				Pass: &v1alpha1.Pass{At: metav1.NewTime(now), Kind: "containers", Trigger: "forced", Result: "success", Removed: 3}}
		})
		wantScreen(t, m, "done", "done: 0s ago · containers (forced) · success · removed 3, failed 0")
	})
	t.Run("i and R ask for an image and a reclaim-all pass", func(t *testing.T) {
		for k, want := range map[string]string{"i": "images", "R": "reclaim-all"} {
			m, dyn := commandView(t)
			hit(t, hit(t, m, k), "y")
			if p := specOf(t, dyn, "node-d").Pass; p == nil || p.Kind != want {
				t.Errorf("%s: spec.pass %+v, want %s", k, p, want)
			}
		}
	})
	t.Run("d previews a full pass; its outcome offers the full pass, y runs it", func(t *testing.T) {
		m, dyn := commandView(t)
		m = hit(t, hit(t, m, "D"), "y")
		p := specOf(t, dyn, "node-d").Pass
		if p == nil || p.Kind != "full" || !p.Preview {
			t.Fatalf("spec.pass %+v, want a preview of a full pass", p)
		}
		m = withStatus(t, m, func(s *v1alpha1.NodeGCStatus) {
			s.Command = &v1alpha1.CommandOutcome{ID: p.ID, Result: "done", At: metav1.NewTime(now),
				Pass: &v1alpha1.Pass{At: metav1.NewTime(now), Kind: "full", Trigger: "forced", Result: "preview", Removed: 12}}
		})
		wantScreen(t, m, "the preview's outcome", "done: a full pass would remove 12 items now",
			"The preview on node-d: a full pass would remove 12 items now.", "On node node-d: run a full pass?")
		m = hit(t, m, "y")
		if p2 := specOf(t, dyn, "node-d").Pass; p2 == nil || p2.Kind != "full" || p2.Preview || p2.ID == p.ID {
			t.Errorf("after y: spec.pass %+v", p2)
		}
	})
	t.Run("p pauses until an expiry the operator moves with + and -, and shows its end", func(t *testing.T) {
		m, dyn := commandView(t)
		m = hit(t, m, "p")
		wantScreen(t, m, "the default", "On node node-d: pause the periodic passes until 13:00:00 (1h0m0s)?")
		m = hit(t, hit(t, hit(t, m, "+"), "+"), "-")
		wantScreen(t, m, "+ + -", "until 14:00:00 (2h0m0s)?")
		m = hit(t, m, "y")
		p := specOf(t, dyn, "node-d").Pause
		if p == nil || !p.Until.Time.Equal(now.Add(2*time.Hour)) || p.By != "alice" {
			t.Fatalf("spec.pause %+v", p)
		}
		m = withStatus(t, m, func(s *v1alpha1.NodeGCStatus) {
			s.Paused = &v1alpha1.Pause{ID: p.ID, Since: metav1.NewTime(now), By: "alice", Until: &p.Until}
		})
		wantScreen(t, m, "paused", "acknowledged: paused until 14:00:00")
		m = withStatus(t, m, func(*v1alpha1.NodeGCStatus) {})
		wantScreen(t, m, "ended", "the pause has ended")
	})
	t.Run("p on a pause sent through the object resumes; on one asked on the node it says why not", func(t *testing.T) {
		m, dyn := commandView(t)
		m = hit(t, hit(t, m, "p"), "y")
		pause := specOf(t, dyn, "node-d").Pause
		m = withStatus(t, m, func(s *v1alpha1.NodeGCStatus) {
			s.Paused = &v1alpha1.Pause{ID: pause.ID, Since: metav1.NewTime(now), By: "alice", Until: &pause.Until}
		})
		m = hit(t, m, "p")
		wantScreen(t, m, "the resume's confirm", "On node node-d: resume the periodic passes (paused by alice)?")
		m = hit(t, m, "y")
		if s := specOf(t, dyn, "node-d"); s.Pause != nil {
			t.Errorf("spec.pause %+v after a resume", s.Pause)
		}
		m = withStatus(t, m, func(*v1alpha1.NodeGCStatus) {})
		wantScreen(t, m, "resumed", "done: resumed")

		m = withStatus(t, m, func(s *v1alpha1.NodeGCStatus) {
			s.Paused = &v1alpha1.Pause{Since: metav1.NewTime(now), By: "local"}
		})
		m = hit(t, m, "p")
		wantScreen(t, m, "a local pause", "paused on the node itself by local")
		if strings.Contains(m.Screen(), "On node") {
			t.Errorf("a confirm opened for a pause the object cannot end:\n%s", m.Screen())
		}
	})
}

// A command the API server refuses is one line naming why: RBAC's verb
// and resource (403), a node without an agent; the view stays.
func TestNodeViewCommandRefused(t *testing.T) {
	m, dyn := commandView(t)
	dyn.PrependReactor("patch", "nodegcs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "nodegc.io", Resource: "nodegcs"}, "node-d",
			errors.New(`User "alice" cannot patch resource "nodegcs" in API group "nodegc.io" at the cluster scope`))
	})
	m = hit(t, hit(t, m, "i"), "y")
	wantScreen(t, m, "a 403", "not sent to node-d: your kubeconfig may not patch nodegcs.nodegc.io (forbidden)", "40% used")

	var tm tea.Model = New(Options{Now: func() time.Time { return now }, Node: "node-c", Commands: fleet.CommandsFor(dyn, time.Now)})
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 220, Height: 40})
	tm, _ = tm.Update(ReadMsg{Nodes: fixture(), At: now})
	m = hit(t, tm.(Model), "x")
	wantScreen(t, m, "no agent", "node node-c has no agent (no NodeGC object): nothing to ask")

	ro := New(Options{Now: func() time.Time { return now }, Node: "node-d"})
	tm, _ = ro.Update(tea.WindowSizeMsg{Width: 220, Height: 40})
	tm, _ = tm.Update(ReadMsg{Nodes: fixture(), At: now})
	m = hit(t, tm.(Model), "D")
	wantScreen(t, m, "without commands", "no commands from this view")
}
