package control

import (
	"context"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// commandTimeout bounds a command whose caller has no context (pause,
// resume).
const commandTimeout = 10 * time.Second

// Attached is a dashboard's view of an agent through a Client: it has
// the scheduler's methods the dashboard's Controller asks for, and the
// readers of its Options (Snapshot, Plan, ImageFs, Changed), each over
// the control socket. Run follows the agent's notices; Status answers
// from the latest of them, so it costs no call.
type Attached struct {
	c *Client

	mu     sync.Mutex
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

// keptFingerprints bounds Attached's map of fingerprints.
const keptFingerprints = 8

// NewAttached returns the dashboard's view of the agent whose status is
// st. A status without its last report (StatusBrief) is enough: Run hands
// the report to the subscribers as a notice once the agent's notices
// bring it.
func NewAttached(c *Client, st Status) *Attached {
	a := &Attached{c: c, st: st.Scheduler, policy: st.Policy, fps: map[uint64]uint64{}}
	a.st.Seq = 0 // the agent's own; ours count from here
	a.shown = reportKey(st.Scheduler.LastReport)
	return a
}

// reportKey names a real pass report: its pass ID and end; "" for none.
func reportKey(r *engine.PassReport) string {
	if r == nil {
		return ""
	}
	return r.PassID() + "@" + r.FinishedAt.String()
}

// Run follows the agent's notices until ctx ends, reconnecting after a
// break, and passes each on to the subscribers.
func (a *Attached) Run(ctx context.Context) {
	for ctx.Err() == nil {
		ch, err := a.c.Notices(ctx)
		if err == nil {
			for n := range ch {
				a.mu.Lock()
				a.st = n.Status
				a.seq++
				a.st.Seq = a.seq
				if a.c.ReadOnly() {
					a.st.ReadOnly = true
				}
				n.Status = a.st
				switch {
				case n.Report != nil && !n.Report.DryRun:
					a.shown = reportKey(n.Report)
				case n.Report == nil && n.Status.LastReport != nil && reportKey(n.Status.LastReport) != a.shown:
					// The last pass, which the subscribers have not had:
					// the dashboard opened on a brief status, or the agent
					// ran it while the stream was down.
					a.shown = reportKey(n.Status.LastReport)
					r := *n.Status.LastReport
					n.Report = &r
				}
				a.subs.Publish(n)
				a.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Status returns the agent scheduler's latest state.
func (a *Attached) Status() engine.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	st.ReadOnly = st.ReadOnly || a.c.ReadOnly()
	return st
}

// Subscribe returns a channel of the agent's notices and a func that
// unsubscribes.
func (a *Attached) Subscribe() (<-chan engine.Notice, func()) {
	return a.subs.Subscribe(64)
}

// Force asks the agent to run a pass now; cancelling ctx stops it after
// its items in flight.
func (a *Attached) Force(ctx context.Context, kind engine.PassKind) (engine.PassReport, error) {
	return a.c.Force(ctx, kind)
}

// Preview asks the agent for a dry run.
func (a *Attached) Preview(ctx context.Context, kind engine.PassKind) (engine.PassReport, error) {
	return a.c.Preview(ctx, kind)
}

// Apply asks the agent to apply exactly p.
func (a *Attached) Apply(ctx context.Context, p engine.Plan) (engine.PassReport, error) {
	return a.c.Apply(ctx, p)
}

// Pause pauses the agent's periodic passes; the notice that follows
// shows it.
func (a *Attached) Pause() { a.command(a.c.Pause) }

// Resume resumes them.
func (a *Attached) Resume() { a.command(a.c.Resume) }

func (a *Attached) command(fn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	_ = fn(ctx)
}

// Snapshot has the agent snapshot the node, with its image records.
func (a *Attached) Snapshot(ctx context.Context) (engine.Snapshot, error) {
	r, err := a.c.Snapshot(ctx)
	if err != nil {
		return engine.Snapshot{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.policy = r.Policy
	if len(a.fps) >= keptFingerprints {
		clear(a.fps)
	}
	a.fps[engine.ContainersFingerprint(r.Snapshot.Containers)] = r.Fingerprint
	return r.Snapshot, nil
}

// Plan plans a snapshot with the agent's effective policy, as of its
// latest snapshot: the plan its next pass makes of that snapshot. It
// makes no call.
func (a *Attached) Plan(s engine.Snapshot, kind engine.PassKind, at time.Time) (engine.Plan, error) {
	a.mu.Lock()
	p := a.policy
	a.mu.Unlock()
	if at.IsZero() {
		at = s.TakenAt
	}
	return engine.PlanPass(s, p, kind, at), nil
}

// ImageFs has the agent measure the image filesystem.
func (a *Attached) ImageFs(ctx context.Context) (engine.FsStats, error) { return a.c.ImageFs(ctx) }

// Changed reports whether the node's containers differ from those whose
// (local) fingerprint is since: one the agent snapshotted for Snapshot.
// An unknown since is a change.
func (a *Attached) Changed(ctx context.Context, since uint64) (bool, error) {
	a.mu.Lock()
	remote, ok := a.fps[since]
	a.mu.Unlock()
	if !ok {
		return true, nil
	}
	return a.c.Changed(ctx, remote)
}
