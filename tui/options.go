package tui

import (
	"context"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/forecast"
)

// Controller is what the dashboard asks of the scheduler: the engine's
// one controller contract (engine.Controller), which the embedded
// scheduler and an attached agent's client both satisfy.
type Controller = engine.Controller

// Agent names the nodegc agent a dashboard is attached to.
type Agent struct {
	PID       int
	StartedAt time.Time
}

// SelfSample is one reading of nodegc's own resource use.
type SelfSample struct {
	// CPU is the process's cumulative user plus system CPU time.
	CPU time.Duration
	// RSSBytes is the resident set size.
	RSSBytes int64
}

// Options configure the dashboard.
type Options struct {
	// Controller runs and previews passes. nil shows the node without
	// acting on it (as read-only, and with no engine state).
	Controller Controller
	// Snapshot reads the node; required. (*engine.Engine).Snapshot fits.
	Snapshot func(ctx context.Context) (engine.Snapshot, error)
	// Plan plans a pass over a snapshot with the engine's effective
	// policy, the one its passes and dry-runs use (which holds MaxAge back
	// on a fresh start); required. The Images and Containers panes show
	// the engine's explanation of Plan(snapshot, engine.PassFull, now), so
	// they never show a removal the next pass would not make.
	// (*engine.Engine).PlanSnapshot fits.
	Plan func(s engine.Snapshot, kind engine.PassKind, at time.Time) (engine.Plan, error)
	// Policy is the configured policy (the engine's), shown on the
	// Overview.
	Policy engine.Policy
	// Cgroups reads the kubepods cgroup tree, with names resolved from the
	// latest snapshot; nil leaves the Cgroups pane empty. CgroupsFrom wraps
	// a cgroupfs.Reader.
	Cgroups func(ctx context.Context, names cgroupfs.Names) (*cgroupfs.Tree, error)
	// ImageFs measures the image filesystem alone, cheaply; nil leaves
	// the usage to the snapshots. While the event stream is live the
	// dashboard reads it every RefreshInterval and lists the node again
	// when the usage moved (an image pulled or removed sends no container
	// event). (*engine.Engine).RemeasureImageFs fits (a statfs alone).
	ImageFs func(ctx context.Context) (engine.FsStats, error)
	// Events makes the dashboard refresh on the Controller's notices of
	// the node's containers (engine.Notice.Containers), from the engine's
	// one follower of the runtime's event stream; false polls. While the
	// stream is live (engine.Status.Events) the dashboard lists the node
	// on each notice (a burst coalesced), on a pass, on r, and every
	// SafetyInterval (StreamSafetyInterval while no pod source is ready),
	// instead of every RefreshInterval; when it is
	// missing or broken, it polls and says so on the status line, until
	// the engine reconnects.
	Events bool
	// Changed is the light poll of a runtime without an event stream: it
	// reports whether the node's containers differ from the ones whose
	// engine.ContainersFingerprint is since (the dashboard passes its
	// shown snapshot's), at a fraction of a snapshot and a plan. While
	// polling, the
	// dashboard asks it every RefreshInterval and refreshes in full only
	// on a change, on r, after a pass, when the image fs usage moves
	// (ImageFs), and every SafetyInterval; nil refreshes in full every
	// RefreshInterval. (*engine.Engine).ContainersChanged fits.
	Changed func(ctx context.Context, since uint64) (bool, error)
	// Listings, when set, tells the dashboard of the listings the engine
	// makes for itself (each periodic pass lists the node): a listing that
	// reads as the screen does (Digest) counts as a re-list, so the
	// dashboard's safety-net re-list does not follow a pass's; one that
	// differs lists the node for the screen. cmd/nodegc feeds it from
	// engine.Options.OnSnapshot, keeping only the latest.
	Listings <-chan Listing
	// AfterRefresh, when set, runs (off the screen's goroutine) after each
	// refresh is applied, and after each real pass that no refresh follows:
	// a refresh of a large node, or a pass's own listing and plan, leaves
	// tens of megabytes of garbage, and cmd/nodegc returns it to the
	// system then (debug.FreeOSMemory), so that an idle dashboard's memory
	// stays flat, with periodic passes too.
	AfterRefresh func()
	// Self reads nodegc's own CPU and memory; nil reads /proc/self.
	Self func() (SelfSample, error)
	// HideSelf leaves nodegc's own usage off the Overview (golden tests).
	HideSelf bool
	// ForecastHistory is the image fs readings of the state dir's
	// forecast history (the agent's, agent.ReadForecastHistory), oldest
	// first: the Overview's forecast starts from them rather than after
	// forecast.MinHistory of its own readings. nil starts it empty.
	ForecastHistory []forecast.Reading
	// ReadOnly disables the destructive keys (g, c, G and applying a
	// preview); the help says "read-only" where they would be.
	ReadOnly bool
	// RefreshInterval is the time between snapshots; 0 means 2s.
	RefreshInterval time.Duration
	// Journal reads the deletion journal's lines, oldest first
	// (engine.ReadJournalLines over the state dir); nil leaves the Events
	// pane to this session's passes and disables the journal view (L).
	// The Events pane lists the last feed.MaxPasses passes it records,
	// earlier runs' too; the journal view its last JournalLines lines.
	Journal func(ctx context.Context) ([]engine.JournalEntry, error)
	// History reads the latest passes the engine kept, whoever started
	// them (an agent's GET /v1/reports); nil leaves the Events pane to
	// the journal and this session's passes.
	History func(ctx context.Context) ([]engine.PassReport, error)
	// JournalPath is the deletion journal's path, named in a pass's
	// details; "" when the dashboard cannot delete.
	JournalPath string
	// Version is shown on the Overview.
	Version string
	// Agent, when set, is the agent the dashboard is attached to: the
	// Controller and the readers go through its control socket, and the
	// engine line says "attached to agent (pid N, up 3h)".
	Agent *Agent
	// NewStateDir is the state dir this dashboard's engine has just
	// created, "" when it was there: the scheduler starts paused, and the
	// first frame asks whether to start the periodic passes; the answer
	// that is not y keeps them paused (p starts them later). A new dir
	// holds no records (every image counts as first seen now) and may be
	// a mistyped --state-dir.
	NewStateDir string
	// Opening, when set, is the opening frame already on the terminal
	// (Open): Run draws over it, and writes through it so that its Close
	// knows whether the dashboard has left the alternate screen.
	Opening *Opening
	// Now is the clock; nil means time.Now. Tests fix it.
	Now func() time.Time
	// FPS caps the frame rate; 0 means 10. Bubble Tea v2.0.10's renderer
	// wakes FPS times a second whatever the screen does (a frame that did
	// not change costs a string comparison, but the wake-up does not), and
	// one that changed by a line is parsed whole into its cell buffer and
	// compared line by line, so that only the changed cells are written.
	// On a loaded 2-core VM a bare Bubble Tea program left idle used 0.24%
	// of a core at 15 frames a second, 0.16% at 10 and 0.08% at 5: 10
	// keeps a key's echo within 100 ms. v2.0.10 has no way to leave the
	// renderer asleep while nothing changes (its ticker runs from
	// startRenderer; WithFPS and WithoutRenderer are the only options).
	FPS int

	// refreshTimeout bounds a refresh's snapshot (refreshTimeout unless
	// a test lowers it); snapshotSlot is held while a snapshot call runs,
	// so a hung one is never joined by another.
	refreshTimeout time.Duration
	snapshotSlot   chan struct{}
	// timer arms the clock's tick (tea.Tick unless a test drives the
	// model by hand).
	timer func(time.Duration, func(time.Time) tea.Msg) tea.Cmd
}

// CgroupsFrom returns an Options.Cgroups that reads the tree with cfg. One
// cgroupfs.Reader serves every refresh: only the first walks the tree and
// opens its files, later ones re-read the files it keeps open, which costs
// a fraction of a one-shot cgroupfs.Read. The Reader is made at the first
// call (and again at the next one when that failed, such as before the
// cgroup filesystem is mounted); its files stay open for the life of the
// process, at most cfg.MaxOpenFiles of them.
func CgroupsFrom(cfg cgroupfs.Config) func(context.Context, cgroupfs.Names) (*cgroupfs.Tree, error) {
	var (
		mu sync.Mutex
		r  *cgroupfs.Reader
	)
	return func(_ context.Context, names cgroupfs.Names) (*cgroupfs.Tree, error) {
		mu.Lock()
		if r == nil {
			nr, err := cgroupfs.NewReader(cfg)
			if err != nil {
				mu.Unlock()
				return nil, err
			}
			r = nr
		}
		mu.Unlock()
		return r.Read(names)
	}
}

// DefaultRefreshInterval is the time between snapshots when Options leave
// it unset.
const DefaultRefreshInterval = 2 * time.Second

func (o Options) withDefaults() Options {
	if o.Self == nil {
		o.Self = readSelf
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FPS <= 0 {
		o.FPS = 10
	}
	if o.Controller == nil {
		o.ReadOnly = true
	}
	if o.refreshTimeout <= 0 {
		o.refreshTimeout = refreshTimeout
	}
	o.snapshotSlot = make(chan struct{}, 1)
	if o.timer == nil {
		o.timer = tea.Tick
	}
	return o
}
