package cluster

import (
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/fleet"
)

// agentUser is the agent's ServiceAccount (deploy/rbac.yaml).
const agentUser = "system:serviceaccount:nodegc:nodegc"

// writes is the agent's writes of NodeGC objects in the audit log from
// since to until: their count and the bytes of their bodies.
func (c *cluster) writes(t *testing.T, since, until time.Time) (n, bytes int) {
	t.Helper()
	for _, ev := range auditEvents(t, c.cp.AuditLog) {
		if ev.User.Username != agentUser || ev.ObjectRef.Resource != v1alpha1.Resource || ev.Verb == "get" ||
			ev.RequestReceivedAt.Before(since) || !ev.RequestReceivedAt.Before(until) {
			continue
		}
		n++
		bytes += len(ev.RequestObject)
	}
	return n, bytes
}

// restWindow is NODEGC_WRITES_REST, how long the agent is watched at
// rest (default 1 minute; docs/performance.md's figures took 11).
func restWindow(t *testing.T) time.Duration {
	d := time.Minute
	if v := os.Getenv("NODEGC_WRITES_REST"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < time.Minute {
			t.Fatalf("NODEGC_WRITES_REST=%q: want a duration of a minute or more", v)
		}
	}
	return d
}

// TestNodeGCWritesMeasured measures what one agent costs the API server
// (docs/performance.md): its writes of its NodeGC object and their bytes,
// counted in the API server's audit log (every NodeGC write, with its
// body). At rest (the node unchanged, its passes still running every
// 2 s): at most the heartbeat, one write a HeartbeatPeriod, which the
// test holds it to. During passes: six forced full passes through the
// object, one every 10 s. It logs both per minute and projected to
// 2,000 and 5,000 nodes.
func TestNodeGCWritesMeasured(t *testing.T) {
	c := sharedCluster(t)
	c.waitAgentReady(t)
	c.waitNodeGC(t, "a synced status with an image pass", func(o *v1alpha1.NodeGC) bool {
		return o.Status.HeartbeatTime != nil && o.Status.PodSource == "synced" && o.Status.LastImagePass != nil
	})
	time.Sleep(10 * time.Second) // the start's writes, at most one every 5 s, are over

	rest := restWindow(t)
	from := time.Now()
	time.Sleep(rest)
	n, b := c.writes(t, from, time.Now())
	if most := int(rest/fleet.HeartbeatPeriod) + 1; n > most {
		t.Errorf("at rest the agent wrote %d times in %s, want at most %d (a heartbeat every %s)", n, rest, most, fleet.HeartbeatPeriod)
	}
	perMin := float64(n) / rest.Minutes()
	t.Logf("at rest, %s: %d writes, %d bytes: %.2f writes and %.0f bytes a minute an agent; at 2,000 nodes %.0f writes and %.1f KB a minute, at 5,000 %.0f and %.1f KB",
		rest, n, b, perMin, float64(b)/rest.Minutes(), 2000*perMin, 2000*float64(b)/rest.Minutes()/1000, 5000*perMin, 5000*float64(b)/rest.Minutes()/1000)

	admin := c.adminNodeGCs(t)
	from = time.Now()
	const passes = 6
	var last string
	for i := range passes {
		last = fmt.Sprintf("measure-%d-%d", time.Now().UnixNano(), i)
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := admin.Get(t.Context(), c.nodeName)
			if err != nil {
				return err
			}
			obj.Spec.Pass = &v1alpha1.PassCommand{ID: last, Kind: "full", By: "admin"}
			u, err := v1alpha1.ToUnstructured(obj)
			if err != nil {
				return err
			}
			_, err = admin.Resource().Update(t.Context(), u, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
	}
	c.waitNodeGC(t, "the last pass's outcome", func(o *v1alpha1.NodeGC) bool {
		return o.Status.Command != nil && o.Status.Command.ID == last && o.Status.Command.Result == "done"
	})
	took := time.Since(from)
	n, b = c.writes(t, from, time.Now())
	perMin = float64(n) / took.Minutes()
	t.Logf("during passes, %d forced full passes in %s: %d writes (%.1f a pass), %d bytes (%.0f a write): %.1f writes and %.1f KB a minute an agent; at 2,000 nodes %.0f writes and %.0f KB a minute, at 5,000 %.0f and %.0f KB",
		passes, took.Round(time.Second), n, float64(n)/passes, b, float64(b)/float64(max(n, 1)), perMin, float64(b)/took.Minutes()/1000,
		2000*perMin, 2000*float64(b)/took.Minutes()/1000, 5000*perMin, 5000*float64(b)/took.Minutes()/1000)
}
