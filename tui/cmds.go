package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
)

// refreshTimeout bounds one refresh, so a hung runtime cannot pile up
// requests.
const refreshTimeout = 20 * time.Second

// tickMsg re-arms the periodic refresh.
type tickMsg struct{}

// RefreshMsg is the result of one refresh: a snapshot, the plan made from
// it, the scheduler's status, the cgroup tree and nodegc's own usage. Seq
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

// statusMsg carries the scheduler's status after pause or resume.
type statusMsg struct{ status engine.Status }

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

func tick(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{} })
}

// refreshCmd reads everything a refresh shows. It captures its inputs and
// touches no model state.
func refreshCmd(ctx context.Context, o Options, seq uint64) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		defer cancel()
		msg := RefreshMsg{Seq: seq}
		if o.Controller != nil {
			st := o.Controller.Status()
			msg.Status = &st
		}
		snap, err := o.Snapshot(ctx)
		msg.At = o.Now()
		if err != nil {
			msg.Err = err
		} else {
			msg.Snapshot = snap
			msg.Plan = o.Plan(snap, o.Policy, engine.PassFull, msg.At)
			if o.Cgroups != nil {
				msg.Tree, msg.TreeErr = o.Cgroups(ctx, names(snap))
			}
		}
		if s, err := o.Self(); err == nil {
			msg.Self = &s
		}
		return msg
	}
}

// names resolves cgroup IDs from a snapshot: pods by UID, containers by ID,
// and each sandbox's own cgroup as "POD".
func names(s engine.Snapshot) cgroupfs.Names {
	var n cgroupfs.NameMap
	for _, sb := range s.Sandboxes {
		n.AddPod(sb.PodUID, sb.PodNamespace, sb.PodName)
		n.AddContainer(sb.ID, "POD", sb.PodUID)
	}
	for _, c := range s.Containers {
		n.AddContainer(c.ID, c.Name, c.PodUID)
	}
	return &n
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

func pauseCmd(c Controller, pause bool) tea.Cmd {
	return func() tea.Msg {
		if pause {
			c.Pause()
		} else {
			c.Resume()
		}
		return statusMsg{status: c.Status()}
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
