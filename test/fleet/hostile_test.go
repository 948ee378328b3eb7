package fleet

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodegc/nodegc/api/v1alpha1"
)

// evil is what a hostile agent writes in its object's strings: a
// carriage return, a colour, an OSC title and a bell, in 16 characters
// (the shortest bound of a status string).
const evil = "\r\x1b[31mFAKE\x1b]0;o\x07"

// TestFleetHostileObject is issue 36's findings 6 and 7 through a real
// kube-apiserver: an agent (or anyone who may write a NodeGC object)
// cannot write a string or a kept reason past the CRD's bounds, and what
// it can write reaches the operator's terminal escaped, in the fleet's
// row and in the node's view, and intact in -o json.
func TestFleetHostileObject(t *testing.T) {
	api, cs, dyn, bin := fleetAPI(t, true)
	hostile := func() v1alpha1.NodeGCStatus {
		st := status(time.Now(), 42, 3)
		beat := *st.HeartbeatTime
		st.Version, st.PodSource, st.EventStream = "v1"+evil, evil, evil
		st.Kept = map[string]int32{"in-use" + evil: 1}
		st.LastImagePass = &v1alpha1.Pass{At: beat, Kind: "images", Trigger: "threshold", Result: "success" + evil, Reason: evil}
		st.Paused = &v1alpha1.Pause{Since: beat, By: "alice" + evil}
		st.Command = &v1alpha1.CommandOutcome{ID: "c1", Result: evil, Message: "ok" + evil, At: beat}
		return st
	}
	writeObject(t, dyn, "node-evil", createNode(t, cs, "node-evil"), hostile())

	t.Run("the API server refuses a string or a kept reason past its bound", func(t *testing.T) {
		for name, change := range map[string]func(s *v1alpha1.NodeGCStatus){
			"a 129-character command message": func(s *v1alpha1.NodeGCStatus) { s.Command.Message = strings.Repeat("x", 129) },
			"a 17-character pod source":       func(s *v1alpha1.NodeGCStatus) { s.PodSource = strings.Repeat("x", 17) },
			"a 33-character kept reason":      func(s *v1alpha1.NodeGCStatus) { s.Kept = map[string]int32{strings.Repeat("x", 33): 1} },
		} {
			big := hostile()
			change(&big)
			if err := putStatus(t, dyn, "node-evil", "", big); !apierrors.IsInvalid(err) {
				t.Errorf("%s: %v, want Invalid", name, err)
			}
		}
	})

	t.Run("-o json keeps the strings, escaped by JSON", func(t *testing.T) {
		r := fleetJSON(t, bin, api.Admin)["node-evil"]
		if r.Status == nil || r.Status.Paused == nil || r.Status.Paused.By != "alice"+evil {
			t.Errorf("node-evil's row %+v, want its status as written", r)
		}
	})

	t.Run("the row and the node view show them escaped", func(t *testing.T) {
		s := newScreen(t, 400, 30, []string{"TERM=xterm-256color"}, bin, "fleet", "--kubeconfig", api.Admin, "--refresh", "1h")
		clean := func(sc string) bool {
			return !strings.Contains(sc, "\x1b") && !strings.Contains(sc, "\r") && !strings.Contains(sc, "\a")
		}
		sc, _ := s.waitFor(t, "node-evil's row, escaped", time.Minute, func(sc string) bool {
			// The table cuts its cells: the kept reason's shows the most.
			return rowHas(sc, "node-evil", `success\x0d\x1b[`) && rowHas(sc, "node-evil", `in-use\x0d\x1b[31mFAK`)
		})
		if !clean(sc) || strings.Contains(sc, "\nFAKE") {
			t.Errorf("the table holds what the agent wrote raw:\n%q", sc)
		}
		s.press(t, "Enter")
		sc, _ = s.waitFor(t, "the node view, escaped", time.Minute, func(sc string) bool {
			return strings.Contains(sc, `by alice\x0d\x1b[31mFAKE`) && strings.Contains(sc, `ok\x0d\x1b[31mFAKE`)
		})
		if !clean(sc) {
			t.Errorf("the node view holds what the agent wrote raw:\n%q", sc)
		}
	})
}
