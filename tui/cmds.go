package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
)

// refreshTimeout bounds one refresh: its snapshot is given a context
// with this deadline, and the refresh reports a timeout when the deadline
// passes even if the snapshot call does not return (it may wait on a lock
// or a runtime that ignores the context). The engine's Snapshot does not
// wait behind a pass, so this bounds a slow or hung runtime. Options can
// lower it in tests (refreshTimeout).
const refreshTimeout = 20 * time.Second

// errSnapshotBusy is a refresh's error while the snapshot of an earlier,
// timed-out refresh has not returned yet: no second call piles up behind
// a hung one.
var errSnapshotBusy = errors.New("the last snapshot has not returned yet (timed out earlier)")

// boundedSnapshot calls snapshot with a context that expires after d, and
// returns at the deadline even if the call does not: the call goes on in
// its goroutine, holding slot (capacity 1) until it returns, and a later
// call that finds slot taken fails at once with errSnapshotBusy. The
// goroutine touches no model state.
func boundedSnapshot(ctx context.Context, d time.Duration, slot chan struct{}, snapshot func(context.Context) (engine.Snapshot, error)) (engine.Snapshot, error) {
	select {
	case slot <- struct{}{}:
	default:
		return engine.Snapshot{}, errSnapshotBusy
	}
	// cancel is the caller's, not the goroutine's: cancelling as the call
	// returns would make ctx.Done and done ready together, and select
	// could report a finished snapshot as timed out.
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		s   engine.Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := snapshot(ctx)
		// Free the slot before handing the result over: a refresh that
		// starts as soon as this one returns must not find it still taken
		// (the race run's golden test did, and showed errSnapshotBusy).
		<-slot
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // it returned just as the deadline came
			return r.s, r.err
		default:
		}
		return engine.Snapshot{}, fmt.Errorf("timed out after %s: %w", d, ctx.Err())
	}
}

// tickMsg re-arms the periodic refresh. gen is the model's listGen when it
// was armed: a tick armed before the interval changed is dropped.
type tickMsg struct{ gen uint64 }

// SafetyInterval is how often the dashboard lists the node in full while
// the runtime's event stream is live, or while it polls with a light
// check (Options.Changed): a safety net, since every container event, or
// every change the light check finds, already makes it list again.
const SafetyInterval = 60 * time.Second

// StreamSafetyInterval is the safety net's interval while the event
// stream is live and no pod source is ready: then every change the screen
// shows comes with a container event (a pulled or removed image moves the
// usage the pulse reads), and the re-list is there only for an event
// lost, as the kubelet's evented PLEG re-lists every 300 s
// (eventedPlegRelistPeriod, pkg/kubelet/kubelet.go, v1.36.3). A ready pod
// source's view changes with no runtime event (a pod deleted in the API),
// so with one the net stays at SafetyInterval. On the large simulated
// node, a re-list that reads as shown (kept, tui.keepable) still costs
// about half of what the rest of the idle dashboard costs.
const StreamSafetyInterval = 5 * time.Minute

// eventsNote is the status line's word on an event stream that is not
// live (engine.Status.Events); "" before the engine's follower said.
func eventsNote(st engine.EventStream) string {
	switch {
	case st.NoStream:
		return "events: polling (runtime has no event stream)"
	case st.Down != "":
		return "events: polling (event stream: " + st.Down + "); reconnecting"
	}
	return ""
}

// CgroupsHiddenInterval is how often the cgroup tree is read while its
// pane is not on screen; on screen it is read every RefreshInterval. A
// re-read of a large tree costs tens of milliseconds.
const CgroupsHiddenInterval = 30 * time.Second

// pulseMsg is the dashboard's light clock (Model.pulseDelay): it reads
// what is cheap or due (the cgroup tree, the image fs usage) without
// listing the node. gen drops a pulse armed before the latest.
type pulseMsg struct{ gen uint64 }

func pulse(d time.Duration, gen uint64) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return pulseMsg{gen: gen} })
}

// UsageQuietInterval is the longest the image filesystem's usage goes
// unread while it reads the same whole percent as the shown plan: each
// unchanged reading doubles the wait from RefreshInterval up to it, and a
// moved one (an image pulled or removed with no container event) brings
// it back. The kubelet's eviction manager reads the same usage every 10 s
// (evictionMonitoringPeriod, pkg/kubelet/kubelet.go, v1.36.3).
const UsageQuietInterval = 10 * time.Second

// cgroupsMsg is a cgroup tree read; seq drops all but the latest.
type cgroupsMsg struct {
	seq  uint64
	at   time.Time
	tree *cgroupfs.Tree
	err  error
}

// cgroupsCmd reads the cgroup tree with names from a snapshot.
func cgroupsCmd(ctx context.Context, read func(context.Context, cgroupfs.Names) (*cgroupfs.Tree, error), names cgroupfs.Names, now func() time.Time, seq uint64) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		defer cancel()
		tree, err := read(ctx, names)
		return cgroupsMsg{seq: seq, at: now(), tree: tree, err: err}
	}
}

// changedMsg is a light poll's answer (Options.Changed): whether the
// node's containers changed since the shown snapshot. seq drops all but
// the latest; at is when it was asked.
type changedMsg struct {
	seq     uint64
	at      time.Time
	changed bool
	err     error
}

// changedCmd runs the light poll against the fingerprint of the shown
// snapshot's containers, bounded like a refresh.
func changedCmd(ctx context.Context, changed func(context.Context, uint64) (bool, error), since uint64, now func() time.Time, seq uint64) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		defer cancel()
		at := now()
		c, err := changed(ctx, since)
		return changedMsg{seq: seq, at: at, changed: c, err: err}
	}
}

// fsMsg is a usage reading of the image filesystem.
type fsMsg struct {
	fs  engine.FsStats
	err error
}

func fsCmd(ctx context.Context, read func(context.Context) (engine.FsStats, error)) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		defer cancel()
		fs, err := read(ctx)
		return fsMsg{fs: fs, err: err}
	}
}

// RefreshMsg is the result of one refresh: a snapshot, the plan made from
// it, the scheduler's status and nodegc's own usage. The cgroup tree has
// its own clock (cgroupsMsg); Tree and TreeErr are set only by tests. Seq
// numbers refreshes; only the latest is applied.
type RefreshMsg struct {
	Seq      uint64
	At       time.Time
	Snapshot engine.Snapshot
	Plan     engine.Plan
	Err      error
	Status   *engine.Status
	Tree     *cgroupfs.Tree
	TreeErr  error
	Self     *SelfSample
	// Kept marks a periodic re-list that read the node as shown, whose
	// plan would be the shown one (keepable): Snapshot and Plan are empty,
	// and the dashboard keeps what it shows, as fresh as At.
	Kept bool
}

// previewMsg carries a dry-run report for the confirmation modal.
type previewMsg struct {
	seq    uint64
	kind   engine.PassKind
	report engine.PassReport
	err    error
}

// appliedMsg carries the report of an applied plan.
type appliedMsg struct {
	kind   engine.PassKind
	report engine.PassReport
	err    error
}

// statusMsg carries the scheduler's status after pause or resume, and
// the command's error.
type statusMsg struct {
	status engine.Status
	err    error
	// held says this dashboard now holds a pause (engine.Pause.Held).
	held bool
}

// subscribedMsg hands the notice channel to the model.
type subscribedMsg struct {
	ch     <-chan engine.Notice
	cancel func()
}

// noticeMsg is one notice from the scheduler; ok is false once the channel
// is closed.
type noticeMsg struct {
	n  engine.Notice
	ch <-chan engine.Notice
	ok bool
}

func tick(d time.Duration, gen uint64) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}

// refreshCmd reads everything a refresh shows. It captures its inputs and
// touches no model state.
func refreshCmd(ctx context.Context, o Options, seq uint64, keep *shown) tea.Cmd {
	return func() tea.Msg {
		msg := RefreshMsg{Seq: seq}
		if o.Controller != nil {
			st := o.Controller.Status()
			msg.Status = &st
		}
		snap, err := boundedSnapshot(ctx, o.refreshTimeout, o.snapshotSlot, o.Snapshot)
		msg.At = o.Now()
		switch {
		case err != nil:
			msg.Err = err
		case keep != nil && keepable(keep.snap, keep.plan, o.Policy, snap, msg.At):
			msg.Kept = true // the listing is garbage now: the shown one stays
		case o.Plan == nil:
			msg.Err = errors.New("no planner (Options.Plan)")
		default:
			msg.Snapshot = snap
			msg.Plan, msg.Err = o.Plan(snap, engine.PassFull, msg.At)
		}
		if s, err := o.Self(); err == nil {
			msg.Self = &s
		}
		return msg
	}
}

func previewCmd(ctx context.Context, c Controller, kind engine.PassKind, seq uint64) tea.Cmd {
	return func() tea.Msg {
		r, err := c.Preview(ctx, kind)
		return previewMsg{seq: seq, kind: kind, report: r, err: err}
	}
}

func applyCmd(ctx context.Context, c Controller, kind engine.PassKind, p engine.Plan) tea.Cmd {
	return func() tea.Msg {
		r, err := c.Apply(ctx, p)
		return appliedMsg{kind: kind, report: r, err: err}
	}
}

// pauseCmd pauses the periodic passes with p, held by ctx (the
// dashboard's: a held pause ends as the dashboard leaves), or resumes
// them.
func pauseCmd(ctx context.Context, c Controller, pause bool, p engine.Pause) tea.Cmd {
	return func() tea.Msg {
		var err error
		if pause {
			err = c.Pause(ctx, p)
		} else {
			err = c.Resume(ctx)
		}
		return statusMsg{status: c.Status(), err: err, held: pause && p.Held && err == nil}
	}
}

func subscribeCmd(c Controller) tea.Cmd {
	return func() tea.Msg {
		ch, cancel := c.Subscribe()
		return subscribedMsg{ch: ch, cancel: cancel}
	}
}

func waitNotice(ch <-chan engine.Notice) tea.Cmd {
	return func() tea.Msg {
		n, ok := <-ch
		return noticeMsg{n: n, ch: ch, ok: ok}
	}
}
