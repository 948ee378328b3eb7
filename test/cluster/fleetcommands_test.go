package cluster

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/internal/kubetest"
)

// TestFleetNodeViewCommands: in the fleet's node view (`kubectl nodegc
// NODE`, the binary in tmux, the admin's kubeconfig), x asks before a
// container pass naming the node, y writes it into the NodeGC object,
// the agent runs it and the outcome reaches the object and the screen;
// p pauses the periodic passes until the --pause-for expiry, and the
// pause ends by itself, on the object and on the screen. The API
// server's audit log names the user who sent each command, as its spec
// names it.
func TestFleetNodeViewCommands(t *testing.T) {
	if _, err := os.Stat("/usr/bin/tmux"); err != nil {
		kubetest.SkipOrFail(t, "tmux not installed (make deps installs it)")
	}
	c := sharedCluster(t)
	c.waitAgentReady(t)
	c.waitNodeGC(t, "the object", func(o *v1alpha1.NodeGC) bool { return o.Status.HeartbeatTime != nil })
	bin := fleetBinary(t)
	s := newFleetSession(t, 220, 45, []string{"KUBECONFIG=" + c.cp.Admin, "TERM=xterm-256color"}, bin, c.nodeName, "--pause-for", "20s")
	s.waitFor(t, "the node's view", func(sc string) bool {
		return strings.Contains(sc, "nodegc fleet › "+c.nodeName) && strings.Contains(sc, "Agent")
	})

	s.press(t, "x")
	s.waitFor(t, "the confirm naming the node and the action", func(sc string) bool {
		return strings.Contains(sc, "On node "+c.nodeName+": force container GC?")
	})
	s.press(t, "y")
	obj := c.waitNodeGC(t, "the fleet's pass command", func(o *v1alpha1.NodeGC) bool { return o.Spec.Pass != nil })
	pass := *obj.Spec.Pass
	if pass.Kind != "containers" || pass.Preview || pass.By != "admin" {
		t.Errorf("spec.pass %+v, want a containers pass by admin", pass)
	}
	obj = c.waitNodeGC(t, "the pass's outcome", func(o *v1alpha1.NodeGC) bool {
		return o.Status.Command != nil && o.Status.Command.ID == pass.ID && o.Status.Command.Result != "running"
	})
	if o := obj.Status.Command; o.Result != "done" || o.Pass == nil || o.Pass.Trigger != "forced" || o.Pass.Kind != "containers" {
		t.Errorf("outcome %+v, pass %+v", o, o.Pass)
	}
	s.waitFor(t, "the outcome on the screen", func(sc string) bool {
		return strings.Contains(sc, "as "+pass.ID+" · done: ") && strings.Contains(sc, "containers (forced)")
	})

	s.press(t, "p")
	s.waitFor(t, "the pause's confirm", func(sc string) bool {
		return strings.Contains(sc, "On node "+c.nodeName+": pause the periodic passes until") && strings.Contains(sc, "(20s)?")
	})
	s.press(t, "y")
	obj = c.waitNodeGC(t, "the pause", func(o *v1alpha1.NodeGC) bool { return o.Status.Paused != nil && o.Spec.Pause != nil })
	pause := *obj.Spec.Pause
	if p := obj.Status.Paused; p.ID != pause.ID || p.By != "admin" || pause.By != "admin" || p.Until == nil || !p.Until.Equal(&pause.Until) {
		t.Errorf("paused %+v, spec.pause %+v", p, pause)
	}
	s.waitFor(t, "the pause on the screen", func(sc string) bool { return strings.Contains(sc, "acknowledged: paused until") })
	obj = c.waitNodeGC(t, "the pause's end", func(o *v1alpha1.NodeGC) bool { return o.Status.Paused == nil })
	if obj.Status.HeartbeatTime.Before(&pause.Until) {
		t.Errorf("the pause ended by %v, before its end %v", obj.Status.HeartbeatTime, pause.Until)
	}
	s.waitFor(t, "the pause's end on the screen", func(sc string) bool { return strings.Contains(sc, "the pause has ended") })

	for _, id := range []string{pass.ID, pause.ID} {
		ev, ok := commandEvent(t, c.cp.AuditLog, c.nodeName, id)
		if !ok {
			t.Errorf("the audit log has no write of command %s", id)
			continue
		}
		if ev.User.Username != "admin" || ev.Verb != "patch" || ev.ResponseStatus.Code != 200 {
			t.Errorf("command %s's audit event: %s by %q, code %d; want a patch by admin", id, ev.Verb, ev.User.Username, ev.ResponseStatus.Code)
		}
	}
}

// auditEvent is what the tests read of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject     json.RawMessage `json:"requestObject"`
	RequestReceivedAt time.Time       `json:"requestReceivedTimestamp"`
}

// auditEvents reads the completed events of the audit log.
func auditEvents(t *testing.T, path string) []auditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the API server's audit log: %v", err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		if ev.Stage == "ResponseComplete" {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// commandEvent is the audit event of the write to node's object whose
// body holds command id (a pass's or a pause's).
func commandEvent(t *testing.T, path, node, id string) (auditEvent, bool) {
	t.Helper()
	for _, ev := range auditEvents(t, path) {
		if ev.ObjectRef.Resource != v1alpha1.Resource || ev.ObjectRef.Name != node || ev.ObjectRef.Subresource != "" {
			continue
		}
		var body struct {
			Spec v1alpha1.NodeGCSpec `json:"spec"`
		}
		if json.Unmarshal(ev.RequestObject, &body) != nil {
			continue
		}
		if p := body.Spec.Pass; p != nil && p.ID == id {
			return ev, true
		}
		if p := body.Spec.Pause; p != nil && p.ID == id {
			return ev, true
		}
	}
	return auditEvent{}, false
}
