package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// Client as engine.Controller: a dashboard drives an agent through its
// client as it drives its own scheduler. Watch follows the agent's
// notices; Status answers from the latest of them, so it costs no call.
// The readers a dashboard takes besides (NodeSnapshot, PlanSnapshot,
// ImageFs, Changed) are methods too.

var _ engine.Controller = (*Client)(nil)

// follow is what a client keeps of the agent it follows (Watch).
type follow struct {
	st     engine.Status
	policy engine.Policy
	fps    map[uint64]uint64 // local fingerprint → the agent's, of the snapshots handed out
	subs   engine.Subscribers[engine.Notice]
	// seq numbers the statuses handed out (engine.Status.Seq), here
	// rather than the agent's: a new agent behind the same socket starts
	// its own from zero.
	seq uint64
	// shown is the last real pass the subscribers were given, as
	// reportKey says: the status's LastReport, or a notice's Report.
	shown string
}

// keptFingerprints bounds the client's map of fingerprints.
const keptFingerprints = 8

// Watch starts following the agent whose status is st until ctx ends,
// reconnecting after a break, and passes each notice on to the
// subscribers; it returns at once. A status without its last report
// (StatusBrief) is enough: the report reaches the subscribers as a
// notice once the agent's notices bring it.
func (c *Client) Watch(ctx context.Context, st Status) {
	c.mu.Lock()
	c.f.st, c.f.policy = st.Scheduler, st.Policy
	c.f.st.Seq = 0 // the agent's own; ours count from here
	c.f.shown = reportKey(st.Scheduler.LastReport)
	c.mu.Unlock()
	go c.follow(ctx)
}

// reportKey names a real pass report: its pass ID and end; "" for none.
func reportKey(r *engine.PassReport) string {
	if r == nil {
		return ""
	}
	return r.PassID() + "@" + r.FinishedAt.String()
}

// follow reads the agent's notices until ctx ends.
func (c *Client) follow(ctx context.Context) {
	for ctx.Err() == nil {
		if ch, err := c.Notices(ctx); err == nil {
			for n := range ch {
				c.take(n)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// take keeps n's status, numbered by the client, and hands n on: with
// the agent's last pass report when the subscribers have not had it (the
// dashboard opened on a brief status, or the agent ran it while the
// stream was down).
func (c *Client) take(n engine.Notice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &c.f
	f.st = n.Status
	f.seq++
	f.st.Seq = f.seq
	f.st.ReadOnly = f.st.ReadOnly || c.readOnly
	n.Status = f.st
	switch {
	case n.Report != nil && !n.Report.DryRun:
		f.shown = reportKey(n.Report)
	case n.Report == nil && n.Status.LastReport != nil && reportKey(n.Status.LastReport) != f.shown:
		f.shown = reportKey(n.Status.LastReport)
		r := *n.Status.LastReport
		n.Report = &r
	}
	f.subs.Publish(n)
}

// Status returns the agent scheduler's latest state (Watch).
func (c *Client) Status() engine.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.f.st
	st.ReadOnly = st.ReadOnly || c.readOnly
	return st
}

// Subscribe returns a channel of the agent's notices (Watch) and a func
// that unsubscribes.
func (c *Client) Subscribe() (<-chan engine.Notice, func()) {
	return c.f.subs.Subscribe(64)
}

// Pause pauses the agent's periodic passes. A held pause (p.Held) lasts
// while ctx does: its request stays open, and the agent ends the pause
// when the request ends (the dashboard quit, the connection broke). The
// agent names who paused from the connection, not from the client.
func (c *Client) Pause(ctx context.Context, p engine.Pause) error {
	resp, err := c.send(ctx, http.MethodPost, "/v1/pause", jsonBody(PauseRequest{Until: p.Until, Held: p.Held}))
	if err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	var st engine.Status
	err = json.NewDecoder(LimitReply(resp.Body, "POST /v1/pause", MaxSmallReply)).Decode(&st)
	if !p.Held || err != nil {
		resp.Body.Close()
		return err
	}
	// The body ends when ctx does: the transport closes it, and with it
	// the request that holds the pause.
	context.AfterFunc(ctx, func() { resp.Body.Close() })
	return nil
}

// Resume restarts the agent's periodic passes.
func (c *Client) Resume(ctx context.Context) error {
	var st engine.Status
	return c.do(ctx, http.MethodPost, "/v1/resume", MaxSmallReply, struct{}{}, &st)
}

// NodeSnapshot has the agent snapshot the node, with its image records;
// it fits a dashboard's Snapshot.
func (c *Client) NodeSnapshot(ctx context.Context) (engine.Snapshot, error) {
	r, err := c.Snapshot(ctx)
	if err != nil {
		return engine.Snapshot{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.f.policy = r.Policy
	if c.f.fps == nil || len(c.f.fps) >= keptFingerprints {
		c.f.fps = map[uint64]uint64{}
	}
	c.f.fps[engine.ContainersFingerprint(r.Snapshot.Containers)] = r.Fingerprint
	return r.Snapshot, nil
}

// PlanSnapshot plans a snapshot with the agent's effective policy, as of
// its latest snapshot: the plan its next pass makes of that snapshot. It
// makes no call.
func (c *Client) PlanSnapshot(s engine.Snapshot, kind engine.PassKind, at time.Time) (engine.Plan, error) {
	c.mu.Lock()
	p := c.f.policy
	c.mu.Unlock()
	if at.IsZero() {
		at = s.TakenAt
	}
	return engine.PlanPass(s, p, kind, at), nil
}

// Changed reports whether the node's containers differ from those whose
// (local) fingerprint is since: one the agent snapshotted for
// NodeSnapshot. An unknown since is a change.
func (c *Client) Changed(ctx context.Context, since uint64) (bool, error) {
	c.mu.Lock()
	remote, ok := c.f.fps[since]
	c.mu.Unlock()
	if !ok {
		return true, nil
	}
	var r ChangedReply
	return r.Changed, c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/changed?since=%d", remote), MaxSmallReply, nil, &r)
}
