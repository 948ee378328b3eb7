package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodegc/nodegc/engine/executor"
	"github.com/nodegc/nodegc/engine/rules"
	"github.com/nodegc/nodegc/engine/state"
)

// Options configure an Engine.
type Options struct {
	// Reader reads the runtime. Required.
	Reader Reader
	// Remover mutates the runtime; nil makes the engine read-only, and
	// Apply refuses.
	Remover Remover
	// Policy is the effective policy; New validates it.
	Policy Policy
	// StateDir holds the image records and the deletion journal; "" keeps
	// records in memory only and writes no journal. An engine with a
	// Remover checks the dir (see openStateDir), creates it 0700 when
	// missing and holds its lock until Close; a read-only engine only reads
	// the records, if it can, and never creates, changes or writes the dir.
	StateDir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Started is when the run started, which names it (the run ID of its
	// passes); zero means Now at New. The demo's clock reads a warm-up
	// before the wall clock at New, and its run is named by the launch.
	Started time.Time
	// Statfs measures a filesystem by path; nil means the real statfs.
	Statfs func(path string) (FsStats, error)
	// RootFsPath is the root filesystem to report; "" means "/".
	RootFsPath string
	// PodSource reports the API server's view of the pods the snapshot
	// holds something of (Snapshot.PodUIDs): which of them are removable.
	// It is called once per snapshot, after the runtime and the log
	// directories were read. nil means no pod source: not ready, limits
	// only.
	PodSource func(ctx context.Context, s Snapshot) (PodSource, error)
	// PodSourceGen, with a PodSource, returns a number that changes
	// whenever what PodSource says may change for the same snapshot (the
	// API server's pods, the source's readiness). A periodic container
	// pass on a node that has not changed is skipped only while it stays
	// the same (RunPeriodic); nil means no pass is skipped with a pod
	// source.
	PodSourceGen func() uint64
	// ScanLogs makes snapshots list pod log directories and
	// /var/log/containers symlinks for log GC.
	ScanLogs bool
	// ContainerLogsDir overrides /var/log/containers (tests).
	ContainerLogsDir string
	// Logger receives Info per deletion and Debug per item; nil discards.
	Logger *slog.Logger
	// Parallel is how many removals a pass keeps in flight; 0 means
	// DefaultParallel, AutoParallel the adaptive pool, 1 the kubelet's
	// strict one at a time.
	Parallel int
	// OnSnapshot, when set, is given every snapshot the engine takes
	// (those of passes and plans too), once its records are updated, so
	// that an observer (the agent's metrics) sees what a pass saw
	// without listing the node again. It runs with the engine's lock
	// held and must not block or call the engine.
	OnSnapshot func(Snapshot)
}

// MaxPlanAge is how old a plan may be when it is applied. The executor
// re-checks that each item is still unused, not running and not pinned,
// but not that it is still worth removing (the disk may have been freed
// meanwhile, an image re-pulled): a preview left open for longer than an
// image GC period must be made again.
const MaxPlanAge = ImageGCPeriod

// ErrStalePlan is returned by Apply for a plan older than MaxPlanAge.
var ErrStalePlan = errors.New("stale plan")

// ErrReadOnly is returned by Apply on an engine without a Remover.
var ErrReadOnly = errors.New("read-only: this engine cannot remove anything")

// Engine collects snapshots, plans and applies passes for one runtime. It is
// safe for concurrent use: passes are serialised among themselves, and so
// are snapshots and plans (each updates the image records), but a snapshot
// does not wait for a pass in flight.
type Engine struct {
	o       Options
	now     func() time.Time
	statfs  func(string) (FsStats, error)
	log     *slog.Logger
	journal *state.Journal
	sd      *state.Dir // the locked state dir; nil for a read-only engine
	passSeq atomic.Int64
	// run names this engine's run, so that pass IDs are unique across
	// runs (runID).
	run string
	// boot is the machine's boot ID (state.BootID), written on intent lines.
	boot string
	// containerGen counts container events; a pass's view of the node
	// is listed again when it changes.
	containerGen atomic.Uint64
	// streamGen counts every container event of any type and every
	// change of the follower's state (an opening, a break): a quiet
	// container pass is skipped only while it stays the same (quiet.go).
	streamGen atomic.Uint64
	// quiet is the last full container pass's mark, nil when the next
	// periodic one must run in full (quiet.go); under passMu.
	quiet *quietMark
	// own are the containers and sandboxes the last container pass
	// removes, whose stop and delete events do not move streamGen
	// (quiet.go).
	own ownRemovals
	// following is set while FollowEvents holds the runtime's container
	// event stream open.
	following atomic.Bool
	// stream is the follower's state (EventStream).
	stream atomic.Pointer[EventStream]
	// fsMount is the image filesystem's mountpoint the runtime named last
	// (ImageFs), which RemeasureImageFs measures again.
	fsMount atomic.Pointer[string]

	progress   listeners[Progress]
	containers listeners[EventStream]
	// snapshots are told of every snapshot, after Options.OnSnapshot.
	snapshots listeners[Snapshot]
	// issued remembers the plans this engine handed out, which
	// ApplyIssued alone applies.
	issued issuedPlans
	// kneeFor makes the adaptive pool's controller of a phase; nil means
	// executor.NewKnee on the wall clock (tests script it).
	kneeFor func(widest int) *executor.Knee

	// passMu serialises passes. A pass holds it throughout, and e.mu only
	// while it touches the records, the notes and the journal's
	// reconciliation, so a snapshot (the dashboard's refresh) never waits
	// for a pass to finish.
	passMu sync.Mutex
	// mu guards what follows and serialises snapshots and plans.
	mu sync.Mutex
	// passing is set while a pass runs: a snapshot then leaves the
	// journal alone (the pass's own intents are open, not interrupted).
	passing bool
	records map[string]ImageRecord
	// usedAt is the time the last update of the records stamped on the
	// images in use (updateRecords' prevUsed); savedAt is when the
	// records were last written.
	usedAt, savedAt time.Time
	started         time.Time
	fresh           bool // started without persisted records
	// Warning is set when the records file was corrupt and moved aside.
	warning error
	// notes says what reconciliation found, for the next pass's report.
	notes []string
	// rec settles the journal's open intents; nil without a journal.
	rec *state.Reconciler
}

// ContainerEvent tells the engine that a container was created or started
// (the runtime's event stream). A pass in flight lists the node again
// before its next re-check instead of trusting its view for up to
// ViewWindow. Safe to call from any goroutine, at any time.
func (e *Engine) ContainerEvent() { e.containerGen.Add(1) }

// Following reports whether the engine follows the runtime's container
// event stream (FollowEvents, with the stream open): an image re-check
// then trusts the view refreshed on every container event, and lists no
// active containers of its own (see ViewWindow).
func (e *Engine) Following() bool { return e.following.Load() }

// OnProgress registers fn to receive a running pass's progress after each
// item; it returns a func that unregisters it. fn runs on the pass's
// goroutines and must not block.
func (e *Engine) OnProgress(fn func(Progress)) (cancel func()) { return e.progress.add(fn) }

// OnSnapshots registers fn to receive every snapshot the engine takes
// (as Options.OnSnapshot does); it returns a func that unregisters it.
// fn runs with the engine's lock held and must not block or call the
// engine.
func (e *Engine) OnSnapshots(fn func(Snapshot)) (cancel func()) { return e.snapshots.add(fn) }

// publishProgress calls every progress listener.
func (e *Engine) publishProgress(p Progress) { e.progress.publish(p) }

// runID names one run of an engine: its start time (UTC, to the second)
// and 8 random hex digits, so that two runs never share a name even when
// they start in the same second or under a fixed test clock. With the pass
// sequence it makes a pass ID unique across runs ("<run>/<n>").
func runID(start time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return start.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// New validates the options and the policy, and loads the image records
// from StateDir. An engine that can remove takes the state dir's lock
// (release it with Close) and refuses an unsafe dir with a *StateDirError;
// a corrupt records file is moved aside and the engine starts fresh, which
// Warning reports. A read-only engine writes nothing to the state dir.
func New(o Options) (*Engine, error) {
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	e := newEngine(o)
	switch {
	case o.StateDir == "":
		return e, nil
	case o.Remover == nil:
		e.loadRecordsReadOnly()
		return e, nil
	}
	if err := e.openState(); err != nil {
		return nil, err
	}
	return e, nil
}

// checkOptions refuses options an engine cannot run with: no reader, an
// invalid policy, or, for an engine that removes, a pod log directory
// that someone other than root may write (log GC removes there as root).
func checkOptions(o Options) error {
	if o.Reader == nil {
		return errors.New("engine: no runtime reader")
	}
	if err := o.Policy.Validate(); err != nil {
		return err
	}
	if o.Remover == nil {
		return nil
	}
	dir := cmp.Or(o.Policy.PodLogsDir, DefaultPodLogsDir)
	if err := CheckPodLogsDirOnDisk(dir); err != nil {
		return &PolicyError{Field: "pod-logs-dir", Msg: fmt.Sprintf("%v; log GC removes as root only from a directory no one else can write", err)}
	}
	return nil
}

// newEngine is an engine with the options' defaults filled in (clock,
// statfs, logger, pod log directory), its run named, and no state loaded.
func newEngine(o Options) *Engine {
	e := &Engine{o: o, now: o.Now, statfs: o.Statfs, log: o.Logger, records: map[string]ImageRecord{}}
	if e.now == nil {
		e.now = time.Now
	}
	if e.statfs == nil {
		e.statfs = Statfs
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.o.Policy.PodLogsDir == "" {
		e.o.Policy.PodLogsDir = DefaultPodLogsDir
	}
	e.started = e.now()
	named := e.started
	if !o.Started.IsZero() {
		named = o.Started
	}
	e.run = runID(named)
	e.boot = state.BootID()
	e.fresh = true
	return e
}

// loadRecordsReadOnly loads the image records of a read-only engine, if
// they can be read, and keeps them in memory only: it writes nothing to
// the state dir. A problem is a warning, never an error.
func (e *Engine) loadRecordsReadOnly() {
	dir := e.o.StateDir
	recs, found, warning, err := state.LoadRecords(dir, e.started, false)
	if err != nil {
		warning = fmt.Errorf("--state-dir %s: %w; image records are kept in memory only", dir, err)
	}
	if warning != nil {
		e.log.Warn("image records not used", "err", warning)
		e.warning = warning
	}
	if err == nil {
		e.records, e.fresh = recs, !found
	}
}

// openState takes the state dir's lock and loads what an engine that
// removes keeps there: the image records (a corrupt file is moved aside,
// a warning) and the journal (its tail repaired). On
// any error the lock is released again.
func (e *Engine) openState() error {
	dir := e.o.StateDir
	sd, err := state.OpenDir(dir, state.RuntimeEndpoint(e.o.Remover))
	if err != nil {
		return err
	}
	recs, found, warning, err := state.LoadRecords(dir, e.started, true)
	if err != nil {
		sd.Close()
		return &StateDirError{Dir: dir, Err: err}
	}
	if warning != nil {
		e.log.Warn("image records reset", "err", warning)
		e.warning = warning
	}
	e.records, e.fresh = recs, !found
	j, err := state.OpenJournal(dir)
	if err != nil {
		sd.Close()
		return &StateDirError{Dir: dir, Err: err}
	}
	if note, err := j.Repair(); err != nil {
		j.Close()
		sd.Close()
		return &StateDirError{Dir: dir, Err: err}
	} else if note != "" {
		e.log.Warn("journal repaired", "err", note)
		e.warning = errors.Join(e.warning, errors.New(note))
	}
	e.sd, e.journal = sd, j
	e.rec = state.NewReconciler(state.ReconcileOptions{Journal: j, Dir: dir, Reader: e.o.Reader, Now: e.now, Log: e.log, Run: e.run, Boot: e.boot, InFlight: CallTimeout})
	return nil
}

// Close releases the state dir's lock. The engine must not be used after.
func (e *Engine) Close() error {
	e.passMu.Lock()
	defer e.passMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.journal.Close(), e.sd.Close())
}

// persists reports whether the engine writes image records: only an engine
// that can remove and holds its state dir.
func (e *Engine) persists() bool { return e.sd != nil }

// Warning returns the problem found with the persisted state at start (a
// corrupt records file that was moved aside), or nil.
func (e *Engine) Warning() error { return e.warning }

// Policy returns the effective policy.
func (e *Engine) Policy() Policy { return e.o.Policy }

// ReadOnly reports whether the engine has no Remover.
func (e *Engine) ReadOnly() bool { return e.o.Remover == nil }

// Now returns the engine's clock reading.
func (e *Engine) Now() time.Time { return e.now() }

// Snapshot collects the runtime's state and the filesystems and updates
// the image records (first detected, last used). It persists them when an
// image appeared or vanished, or started or stopped being in use, so a
// first-detected time, and the last use of an image no longer in use,
// survive a crash; the last-used times of the images still in use are
// written again once they are state.RecordsMaxStale old. An idle node's passes
// and the dashboard's refreshes pay no fsync. It does not wait for a pass
// in flight: it sees the node as the pass leaves it so far.
func (e *Engine) Snapshot(ctx context.Context) (Snapshot, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshotLocked(ctx)
}

// snapshotLocked is Snapshot with e.mu held.
func (e *Engine) snapshotLocked(ctx context.Context) (Snapshot, error) {
	if !e.passing {
		e.notes = append(e.notes, e.reconcileLocked(ctx)...)
	}
	s, err := e.collect(ctx)
	if err != nil {
		return s, err
	}
	inUse := rules.InUse(s.Images, s.Containers)
	var changed bool
	e.records, changed = state.UpdateRecords(e.records, s.Images, inUse, s.TakenAt, e.usedAt)
	e.usedAt = s.TakenAt
	stale := len(inUse) > 0 && (s.TakenAt.Sub(e.savedAt) >= state.RecordsMaxStale || s.TakenAt.Before(e.savedAt))
	if e.persists() && (changed || stale) {
		if err := state.SaveRecords(e.o.StateDir, e.records, s.TakenAt); err != nil {
			return s, err
		}
		e.savedAt = s.TakenAt
	}
	s.ImageRecords = state.SortedRecords(e.records)
	if e.o.OnSnapshot != nil {
		e.o.OnSnapshot(s)
	}
	e.snapshots.publish(s)
	return s, nil
}

// Plan takes a snapshot and plans a pass of the kind at the engine's now.
func (e *Engine) Plan(ctx context.Context, kind PassKind) (Plan, error) {
	_, p, err := e.PlanAt(ctx, kind, time.Time{})
	return p, err
}

// PlanAt takes a snapshot and plans a pass of the kind evaluated at at
// (zero: the snapshot's time). It returns the snapshot the plan was made
// from, so a caller can show both.
func (e *Engine) PlanAt(ctx context.Context, kind PassKind, at time.Time) (Snapshot, Plan, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.planLocked(ctx, kind, at, true)
}

// planLocked takes a snapshot and plans a pass of the kind at at; e.mu is
// held. issue remembers the plan for ApplyIssued (a plan handed to a
// caller: Plan, PlanAt, DryRun). A pass's own plan, which the engine
// applies at once (runLocked), is not issued: no client previewed it, and
// remembering it kept a digest of each removal for MaxPlanAge (about a
// megabyte after the large preset's first pass of 4,050 removals, for 5
// minutes; docs/performance.md).
func (e *Engine) planLocked(ctx context.Context, kind PassKind, at time.Time, issue bool) (Snapshot, Plan, error) {
	if !validPass(kind) {
		return Snapshot{}, Plan{}, fmt.Errorf("unknown pass kind %q", kind)
	}
	s, err := e.snapshotLocked(ctx)
	if err != nil {
		return s, Plan{}, err
	}
	if at.IsZero() {
		at = s.TakenAt
	}
	p := PlanPass(s, e.effectivePolicy(at), kind, at)
	if issue && !e.ReadOnly() {
		// Only an engine that can remove may be asked to apply it.
		e.issued.add(p, snapshotObjects(s), e.now())
	}
	return s, p, nil
}

// effectivePolicy is the policy with the MaxAge pass held back while the
// engine has run for less than MaxAge without persisted records: like the
// kubelet, it cannot know how long an image has been idle before it
// started. With records from an earlier run, MaxAge applies at once.
func (e *Engine) effectivePolicy(now time.Time) Policy {
	p := e.o.Policy
	if e.fresh && p.Image.MaxAge > 0 && now.Sub(e.started) < p.Image.MaxAge {
		p.Image.MaxAge = 0
	}
	return p
}

// EffectivePolicy is the policy the engine's passes and dry-runs use at
// now (see PlanSnapshot): a client that plans over the engine's snapshot
// elsewhere (the dashboard attached to an agent) plans with it.
func (e *Engine) EffectivePolicy(now time.Time) Policy { return e.effectivePolicy(now) }

// validPass reports whether kind is a known pass kind.
func validPass(kind PassKind) bool {
	switch kind {
	case PassImages, PassContainers, PassFull, PassReclaimAll:
		return true
	}
	return false
}

// DryRun plans a pass and reports every item as planned. It makes no
// mutating runtime call, and takes no pass number (its ID is 0): a preview
// is not a pass.
func (e *Engine) DryRun(ctx context.Context, kind PassKind) (PassReport, error) {
	p, err := e.Plan(ctx, kind)
	if err != nil {
		return PassReport{}, err
	}
	return DryRunReport(p), nil
}

// DryRunReport is the report of a pass that is only planned: every item of
// the plan, in execution order, as OutcomePlanned, and the bytes the image
// removals are expected to free.
func DryRunReport(p Plan) PassReport {
	r := PassReport{Kind: p.Pass, DryRun: true, StartedAt: p.EvaluatedAt, FinishedAt: p.EvaluatedAt, Plan: p, Items: []ItemResult{}, Events: planEvents(p)}
	for _, it := range executor.PlannedItems(p) {
		it.Outcome, it.Time = OutcomePlanned, p.EvaluatedAt
		r.Items = append(r.Items, it)
		if it.Kind == ItemImage {
			r.EstimatedBytesFreed = AddBytes(r.EstimatedBytesFreed, it.SizeBytes)
		}
	}
	return r
}

// Run plans and applies one pass (see Apply for the stop contract). It
// always lists the node: `nodegc gc` and forced passes run it.
func (e *Engine) Run(ctx context.Context, kind PassKind) (PassReport, error) {
	if e.ReadOnly() {
		return PassReport{}, ErrReadOnly
	}
	e.passMu.Lock()
	defer e.passMu.Unlock()
	return e.runLocked(ctx, kind)
}

// RunPeriodic is Run for the scheduler's periodic passes: a container
// pass is skipped, without listing the node, when nothing could have
// changed its plan since the last full container pass, which removed
// nothing (quiet.go); its report says so (PassReport.Skipped). No journal
// line and no records file is written for it. Every other pass runs as
// Run.
func (e *Engine) RunPeriodic(ctx context.Context, kind PassKind) (PassReport, error) {
	if e.ReadOnly() {
		return PassReport{}, ErrReadOnly
	}
	e.passMu.Lock()
	defer e.passMu.Unlock()
	if kind == PassContainers {
		if r, ok := e.skipQuiet(); ok {
			return r, nil
		}
	}
	return e.runLocked(ctx, kind)
}

// runLocked is Run with e.passMu held. A container pass marks what it saw
// of the node's sources of change before it lists (markQuiet), so that
// the next periodic one may be skipped (keepQuiet).
func (e *Engine) runLocked(ctx context.Context, kind PassKind) (PassReport, error) {
	start := e.now()
	var mark *quietMark
	if kind == PassContainers {
		mark = e.markQuiet(start)
	} else if kind != PassImages {
		e.quiet = nil
	}
	e.mu.Lock()
	s, p, err := e.planLocked(ctx, kind, time.Time{}, false)
	e.mu.Unlock()
	if err != nil {
		e.quiet = nil
		return PassReport{ID: e.passSeq.Add(1), Run: e.run, Kind: kind, StartedAt: start, FinishedAt: e.now(), Error: err.Error(), Events: []Event{}}, err
	}
	stable := mark != nil && TimeStable(s, p, p.EvaluatedAt)
	if mark != nil {
		e.own.set(p)
	}
	fs := s.ImageFs
	r, err := e.applyLocked(ctx, p, start, &fs)
	if kind == PassContainers {
		if mark != nil && err == nil && !planEmpty(p) {
			// The node as the pass left it, if nothing else changed:
			// the next periodic pass is skipped when its plan is empty.
			if rest, ok := removedAll(s, r); ok {
				p = PlanPass(rest, e.effectivePolicy(p.EvaluatedAt), kind, p.EvaluatedAt)
				stable = TimeStable(rest, p, p.EvaluatedAt)
			}
		}
		e.keepQuiet(mark, stable, p, r, err)
	}
	return r, err
}
