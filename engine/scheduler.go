package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Controller is what a dashboard and the control protocol ask of a
// scheduler: its state, a pass now, a preview and the apply of what it
// planned, pause and resume, and its notices. *Scheduler satisfies it;
// so does control.Client, a client of an agent's control socket, so that
// a dashboard drives an agent as it drives its own engine.
type Controller interface {
	// Status returns the scheduler's state.
	Status() Status
	// Force runs a pass of the kind now, paused or not.
	Force(ctx context.Context, kind PassKind) (PassReport, error)
	// Preview is a dry-run of the kind; its report's Plan can be applied.
	Preview(ctx context.Context, kind PassKind) (PassReport, error)
	// Apply applies exactly the given plan: one the engine issued (a
	// preview), or a part of one.
	Apply(ctx context.Context, p Plan) (PassReport, error)
	// Pause stops the periodic passes until Resume, p.Until, or (p.Held)
	// the end of ctx. Who pauses is ctx's actor (WithActor).
	Pause(ctx context.Context, p Pause) error
	// Resume restarts the periodic passes; ctx's actor ends the pause.
	Resume(ctx context.Context) error
	// Subscribe returns a channel of notices and a func that unsubscribes.
	Subscribe() (<-chan Notice, func())
}

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	// ImagePeriod and ContainerPeriod default to the kubelet's 5m and 1m.
	ImagePeriod     time.Duration
	ContainerPeriod time.Duration
	// Paused starts the scheduler paused, in PausedBy's name ("" is
	// "started paused"): the flag or setting that asked for it.
	Paused   bool
	PausedBy string
	// Now is the clock; nil means the engine's clock.
	Now func() time.Time
	// After waits for a duration; nil means time.After. Tests inject it.
	After func(time.Duration) <-chan time.Time
	// Log gets a line for every pause and its end, naming who set it and
	// who or what ended it; nil discards.
	Log *slog.Logger
	// Shadow runs every periodic pass as a dry run that removes nothing
	// (its report is marked PassReport.Shadow) and refuses forced passes
	// and applies, so that what the passes would have removed can be
	// compared with what the kubelet's GC removes (Status.ShadowTally)
	// before nodegc is let remove anything.
	Shadow bool
}

// ErrShadow is returned by Force and Apply on a scheduler in shadow
// mode; it is an ErrReadOnly.
var ErrShadow = fmt.Errorf("shadow mode: this scheduler plans every pass and removes nothing: %w", ErrReadOnly)

// Pause says how long a pause of the periodic passes lasts, besides
// Resume.
type Pause struct {
	// Until ends the pause at that time; zero sets no expiry.
	Until time.Time `json:"until,omitzero"`
	// Held ends the pause when the context given to Pause ends: a
	// dashboard's pause ends when the dashboard leaves, so that no
	// dashboard leaves a node paused behind it.
	Held bool `json:"held,omitempty"`
}

type actorKey struct{}

// WithActor returns ctx naming who sends the commands made with it: the
// control server names the socket peer's uid and pid, or the user the
// API server reviewed, so that the scheduler's log and status say whose a
// pause is.
func WithActor(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, actorKey{}, who)
}

// actor is who sends a command made with ctx: WithActor's, else this
// process.
func actor(ctx context.Context) string {
	if who, ok := ctx.Value(actorKey{}).(string); ok && who != "" {
		return who
	}
	return fmt.Sprintf("uid %d pid %d (this process)", os.Getuid(), os.Getpid())
}

// Status is the scheduler's state, for the dashboard.
type Status struct {
	Paused bool `json:"paused"`
	// PausedBy names who paused (WithActor), PausedSince when, and
	// PausedUntil when the pause expires (zero: no expiry). PauseHeld
	// says the pause ends when its holder leaves (Pause.Held).
	PausedBy    string    `json:"pausedBy,omitempty"`
	PausedSince time.Time `json:"pausedSince,omitzero"`
	PausedUntil time.Time `json:"pausedUntil,omitzero"`
	PauseHeld   bool      `json:"pauseHeld,omitempty"`
	// Running is the kind of pass in flight, "" when idle.
	Running           PassKind    `json:"running,omitempty"`
	NextImagePass     time.Time   `json:"nextImagePass"`
	NextContainerPass time.Time   `json:"nextContainerPass"`
	ImageGCDisabled   bool        `json:"imageGCDisabled"`
	LastReport        *PassReport `json:"lastReport,omitempty"`
	Passes            int64       `json:"passes"`
	ReadOnly          bool        `json:"readOnly"`
	// Shadow is set in shadow mode (SchedulerOptions.Shadow): the
	// periodic passes are planned, nothing is removed, and ReadOnly is
	// set too.
	Shadow bool `json:"shadow,omitempty"`
	// RemovedByOthers counts what vanished that no pass removed, since
	// the scheduler started (OthersTracker); ShadowTally judges the
	// shadow passes against it.
	RemovedByOthers RemovedByOthers `json:"removedByOthers"`
	ShadowTally     ShadowTally     `json:"shadowTally"`
	// Events is the engine's follower of the runtime's container event
	// stream (Engine.EventStream).
	Events EventStream `json:"events"`
	// Seq orders the statuses of one scheduler: every notice carries a
	// greater one than any status read before it. A reader that gets
	// statuses by two ways (notices, and Status read at the start of a
	// slow refresh) keeps the one with the greater Seq, so an older status
	// never overwrites a newer (a pass shown in flight long after it
	// ended). Equal Seqs may differ; the next notice settles them.
	Seq uint64 `json:"seq"`
}

// Newer reports whether st is at least as recent as old (Status.Seq):
// whether a reader holding old should take st.
func (st Status) Newer(old Status) bool { return st.Seq >= old.Seq }

// Notice is what subscribers receive: a finished pass, an event, a running
// pass's progress, a change of the node's containers, or a change of
// status (pause, resume, a pass starting). Status is always set.
type Notice struct {
	Report *PassReport
	Event  *Event
	// Progress is set while a real pass runs, after each item.
	Progress *Progress
	// Containers is set when the node's containers may have changed: the
	// engine's follower of the runtime's event stream read a burst of
	// events, or the stream opened, broke or ended (Status.Events says
	// which). One stream serves the passes and every subscriber.
	Containers bool
	Status     Status
}

// noticeBuffer is how many notices a subscriber may fall behind by before
// it loses some.
const noticeBuffer = 64

// Scheduler runs container GC every ContainerPeriod and image GC every
// ImagePeriod, as the kubelet does, and passes on demand. It can pause and
// resume the periodic passes (forced passes still run), run dry-runs, and
// it publishes reports and kubelet-style events to subscribers.
//
// Unlike the kubelet, the first periodic passes come one period after Run
// starts, so an operator who opens the dashboard has time to pause. A
// periodic container pass on a node that has not changed since the last
// full one is skipped, for StreamSafetyInterval at most (RunPeriodic);
// its report still reaches the subscribers.
type Scheduler struct {
	e     *Engine
	o     SchedulerOptions
	wake  chan struct{}
	runMu sync.Mutex // one pass at a time, periodic or forced

	mu          sync.Mutex
	st          Status
	subs        Subscribers[Notice]
	stopPass    context.CancelFunc // stops the pass in flight; nil when idle
	imageFailed bool               // the previous image pass failed (ImageGCFailed needs two in a row)
	// pauseGen numbers the pauses: a held pause's end or an expiry ends
	// only the pause it was armed for, never a later one.
	pauseGen uint64

	// othersMu guards others, which the engine's snapshots reach with
	// the engine's lock held; it is taken after mu, never before.
	othersMu sync.Mutex
	others   *OthersTracker
}

// NewScheduler returns a scheduler for the engine.
func NewScheduler(e *Engine, o SchedulerOptions) *Scheduler {
	if o.ImagePeriod <= 0 {
		o.ImagePeriod = ImageGCPeriod
	}
	if o.ContainerPeriod <= 0 {
		o.ContainerPeriod = ContainerGCPeriod
	}
	if o.Now == nil {
		o.Now = e.now
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{e: e, o: o, wake: make(chan struct{}, 1), others: NewOthersTracker(o.ImagePeriod, o.ContainerPeriod)}
	e.OnProgress(func(p Progress) { s.publish(Notice{Progress: &p}) })
	e.OnSnapshots(func(snap Snapshot) {
		s.othersMu.Lock()
		s.others.Snapshot(snap)
		s.othersMu.Unlock()
	})
	e.OnContainers(func(EventStream) { s.publish(Notice{Containers: true}) })
	now := o.Now()
	s.st = Status{
		Paused:            o.Paused,
		PausedBy:          pausedAtStart(o.Paused, o.PausedBy),
		PausedSince:       pausedSince(o.Paused, now),
		NextImagePass:     now.Add(o.ImagePeriod),
		NextContainerPass: now.Add(o.ContainerPeriod),
		ImageGCDisabled:   e.Policy().Image.PeriodicDisabled(),
		ReadOnly:          e.ReadOnly() || o.Shadow,
		Shadow:            o.Shadow,
	}
	return s
}

// Engine returns the scheduler's engine.
func (s *Scheduler) Engine() *Engine { return s.e }

// Run runs periodic passes until ctx is done. A read-only engine runs no
// periodic passes.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		s.mu.Lock()
		next := s.nextWake()
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.wake:
			continue
		case <-s.o.After(max(next.Sub(s.o.Now()), 0)):
		}
		now := s.o.Now()
		s.expire(now)
		s.mu.Lock()
		dueC := !now.Before(s.st.NextContainerPass)
		dueI := !s.st.ImageGCDisabled && !now.Before(s.st.NextImagePass)
		if dueC {
			s.st.NextContainerPass = now.Add(s.o.ContainerPeriod)
		}
		if dueI {
			s.st.NextImagePass = now.Add(s.o.ImagePeriod)
		}
		run := !s.st.Paused && (!s.st.ReadOnly || s.o.Shadow)
		s.mu.Unlock()
		if run && dueC {
			s.pass(ctx, PassContainers, false)
		}
		if run && dueI {
			s.pass(ctx, PassImages, false)
		}
		if dueC || dueI {
			s.publish(Notice{})
		}
	}
}

// Wait returns once no pass is in flight. A caller that cancelled the
// contexts of its passes calls it before exiting, so that the process never
// ends between a removal and its journal line: each pass stops after its
// item in flight.
func (s *Scheduler) Wait() {
	s.runMu.Lock()
	s.runMu.Unlock() //nolint:staticcheck // an empty critical section: wait for the pass that holds it
}

// Force runs a pass of the kind now, paused or not. Cancelling ctx stops
// the pass after the items in flight (Engine.Apply's stop contract).
func (s *Scheduler) Force(ctx context.Context, kind PassKind) (PassReport, error) {
	if s.o.Shadow {
		return PassReport{}, ErrShadow
	}
	if s.e.ReadOnly() {
		return PassReport{}, ErrReadOnly
	}
	// A forced pass always lists the node (Engine.Run), never skips.
	return s.do(ctx, kind, func(ctx context.Context) (PassReport, error) { return s.e.Run(ctx, kind) }, true)
}

// pass runs one real pass and publishes its report and events. A
// periodic one may be skipped on a node that has not changed
// (Engine.RunPeriodic); a forced one always lists the node.
func (s *Scheduler) pass(ctx context.Context, kind PassKind, forced bool) (PassReport, error) {
	if s.o.Shadow {
		return s.do(ctx, kind, func(ctx context.Context) (PassReport, error) {
			r, err := s.e.DryRun(ctx, kind)
			r.Kind, r.DryRun, r.Shadow = kind, true, true
			if err != nil {
				// Planned nothing: no prediction (OthersTracker).
				r.Error, r.FinishedAt = err.Error(), s.o.Now()
			}
			return r, err
		}, false)
	}
	run := s.e.RunPeriodic
	if forced {
		run = s.e.Run
	}
	return s.do(ctx, kind, func(ctx context.Context) (PassReport, error) { return run(ctx, kind) }, forced)
}

// do runs fn as the one pass in flight, then records and publishes it.
// planRefused reports whether err refused a plan before any pass of it
// began: stale, not issued here, or malformed.
func planRefused(err error) bool {
	return errors.Is(err, ErrStalePlan) || errors.Is(err, ErrUnknownPlan) || errors.Is(err, ErrBadPlan)
}

func (s *Scheduler) do(ctx context.Context, kind PassKind, fn func(context.Context) (PassReport, error), forced bool) (PassReport, error) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.st.Running = kind
	s.stopPass = cancel
	s.mu.Unlock()
	s.publish(Notice{})
	r, err := fn(ctx)
	if planRefused(err) {
		// Refused before any pass began: there is no pass to count,
		// report or fail (a refused preview is not the kubelet's
		// ContainerGCFailed, and its empty report dated year 1 showed as
		// the last pass).
		s.mu.Lock()
		s.st.Running = ""
		s.stopPass = nil
		s.mu.Unlock()
		s.publish(Notice{})
		return r, err
	}
	r.Forced = forced
	if r.Kind == "" {
		r.Kind = kind
	}
	s.othersMu.Lock()
	s.others.Report(r)
	s.othersMu.Unlock()
	s.mu.Lock()
	s.st.Running = ""
	s.stopPass = nil
	if !r.DryRun {
		r.Events = append(r.Events, s.failureEvents(r, err)...)
	}
	if !r.DryRun || r.Shadow {
		// A shadow pass is a periodic pass that removes nothing: the
		// status counts and shows it; it records no events.
		s.st.Passes++
		s.st.LastReport = statusReport(r)
	}
	s.mu.Unlock()
	rc := r
	s.publish(Notice{Report: &rc})
	if r.DryRun {
		// A preview's events say what a pass would report; only a real
		// pass publishes events, as only the kubelet's passes record them.
		return r, err
	}
	for i := range r.Events {
		ev := r.Events[i]
		s.publish(Notice{Event: &ev})
	}
	return r, err
}

// statusReport is the last pass's report as the status keeps it until
// the next pass: whole but for the image plan's account of every image it
// kept and its LRU order (Keep, Order: 2,000 images' reasons on a large
// node). The pass's notice carries them to its subscribers; kept in the
// status as well, they stayed resident in an idle dashboard for the
// minute to the next pass (2-3 MB after each image pass).
func statusReport(r PassReport) *PassReport {
	r.Plan.ImageGC.Keep, r.Plan.ImageGC.Order = nil, nil
	return &r
}

// failureEvents adds the kubelet's pass-failure events: ContainerGCFailed
// on every failed container pass, ImageGCFailed only when the image pass
// failed twice in a row (the kubelet's prevImageGCFailed). s.mu is held.
func (s *Scheduler) failureEvents(r PassReport, err error) []Event {
	var out []Event
	now := s.o.Now()
	imageFailed := err != nil || hasEvent(r.Events, EventFreeDiskSpaceFailed) || hasEvent(r.Events, EventInvalidDiskCapacity) || kindFailed(r, ItemImage)
	containerFailed := err != nil || kindFailed(r, ItemContainer) || kindFailed(r, ItemSandbox)
	msg := func(kind ItemKind) string {
		if err != nil {
			return err.Error()
		}
		for _, it := range r.Items {
			if it.Kind == kind && it.Outcome == OutcomeFailed {
				return fmt.Sprintf("%s %s: %s", it.Kind, it.ID, it.Error)
			}
		}
		return "failed to free enough disk space"
	}
	if r.Kind == PassContainers || r.Kind == PassFull || r.Kind == PassReclaimAll {
		if containerFailed {
			out = append(out, Event{Time: now, Reason: EventContainerGCFailed, Warning: true, Message: msg(ItemContainer)})
		}
	}
	if r.Kind == PassImages || r.Kind == PassFull || r.Kind == PassReclaimAll {
		if imageFailed && s.imageFailed {
			out = append(out, Event{Time: now, Reason: EventImageGCFailed, Warning: true, Message: imageGCFailedMessage(r, err)})
		}
		s.imageFailed = imageFailed
	}
	return out
}

// kindFailed reports whether any item of the kind failed.
func kindFailed(r PassReport, kind ItemKind) bool {
	for _, it := range r.Items {
		if it.Kind == kind && it.Outcome == OutcomeFailed {
			return true
		}
	}
	return false
}

// Preview runs a dry-run of the kind: a report whose Plan can be applied
// with Apply, and whose items are all OutcomePlanned. It makes no mutating
// runtime call.
func (s *Scheduler) Preview(ctx context.Context, kind PassKind) (PassReport, error) {
	return s.do(ctx, kind, func(ctx context.Context) (PassReport, error) { return s.e.DryRun(ctx, kind) }, true)
}

// Apply applies exactly the given plan, re-checking each item: a plan
// the engine issued (a preview), or a part of one; any other is refused
// (Engine.ApplyIssued). Cancelling ctx stops the pass after the items in
// flight (Engine.Apply's stop contract).
func (s *Scheduler) Apply(ctx context.Context, p Plan) (PassReport, error) {
	if s.o.Shadow {
		return PassReport{}, ErrShadow
	}
	if s.e.ReadOnly() {
		return PassReport{}, ErrReadOnly
	}
	return s.do(ctx, p.Pass, func(ctx context.Context) (PassReport, error) { return s.e.ApplyIssued(ctx, p) }, true)
}

// Stop stops the pass in flight, periodic or forced, as cancelling its
// context does (Engine.Apply's stop contract: the items in flight finish
// and are journalled, no new item starts). It reports whether a pass was
// in flight. Whoever started the pass gets its report, Stopped set.
func (s *Scheduler) Stop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopPass == nil {
		return false
	}
	s.stopPass()
	return true
}

// Pause stops periodic passes until Resume, p.Until or, when p.Held,
// the end of ctx; forced passes still run. A pause replaces the one in
// force. ctx's actor (WithActor) is on record as who paused.
func (s *Scheduler) Pause(ctx context.Context, p Pause) error {
	who := actor(ctx)
	s.mu.Lock()
	s.pauseGen++
	gen := s.pauseGen
	s.st.Paused, s.st.PausedBy, s.st.PausedSince = true, who, s.o.Now()
	s.st.PausedUntil, s.st.PauseHeld = p.Until, p.Held
	s.mu.Unlock()
	attrs := []any{"by", who, "held", p.Held}
	if !p.Until.IsZero() {
		attrs = append(attrs, "until", p.Until)
	}
	s.o.Log.Info("periodic passes paused", attrs...)
	if p.Held {
		context.AfterFunc(ctx, func() { s.endPause(gen, who, "its holder left") })
	}
	s.changed()
	return nil
}

// Resume restarts periodic passes; ctx's actor is on record as who ended
// the pause.
func (s *Scheduler) Resume(ctx context.Context) error {
	s.mu.Lock()
	gen := s.pauseGen
	s.mu.Unlock()
	s.endPause(gen, actor(ctx), "resumed")
	return nil
}

// endPause ends pause gen, if it is still the one in force, and logs who
// set it and who or what (why) ended it.
func (s *Scheduler) endPause(gen uint64, by, why string) {
	s.mu.Lock()
	if !s.st.Paused || gen != s.pauseGen {
		s.mu.Unlock()
		return
	}
	s.pauseGen++
	st := s.st
	s.st.Paused, s.st.PausedBy, s.st.PausedSince, s.st.PausedUntil, s.st.PauseHeld = false, "", time.Time{}, time.Time{}, false
	s.mu.Unlock()
	s.o.Log.Info("periodic passes resumed", "pausedBy", st.PausedBy, "pausedSince", st.PausedSince, "endedBy", by, "reason", why)
	s.changed()
}

// expire ends a pause whose expiry has come by now.
func (s *Scheduler) expire(now time.Time) {
	s.mu.Lock()
	gen, until := s.pauseGen, s.st.PausedUntil
	s.mu.Unlock()
	if !until.IsZero() && !now.Before(until) {
		s.endPause(gen, "the scheduler", "expired at "+until.Format(time.RFC3339))
	}
}

// nextWake is when Run wakes next: the next periodic pass, or an
// earlier expiry of the pause. s.mu is held.
func (s *Scheduler) nextWake() time.Time {
	next := s.st.NextContainerPass
	if !s.st.ImageGCDisabled && s.st.NextImagePass.Before(next) {
		next = s.st.NextImagePass
	}
	if u := s.st.PausedUntil; s.st.Paused && !u.IsZero() && u.Before(next) {
		next = u
	}
	return next
}

// changed wakes Run to the new state and tells the subscribers.
func (s *Scheduler) changed() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.publish(Notice{})
}

// pausedAtStart names who paused a scheduler that starts paused.
func pausedAtStart(paused bool, by string) string {
	switch {
	case !paused:
		return ""
	case by == "":
		return "started paused"
	}
	return by
}

// pausedSince is when a scheduler that starts paused was paused.
func pausedSince(paused bool, now time.Time) time.Time {
	if !paused {
		return time.Time{}
	}
	return now
}

// Status returns the current state.
func (s *Scheduler) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Events = s.e.EventStream()
	s.countOthers(&st)
	return st
}

// countOthers sets st's counts of what others removed and the shadow
// tally. s.mu is held.
func (s *Scheduler) countOthers(st *Status) {
	s.othersMu.Lock()
	st.RemovedByOthers, st.ShadowTally = s.others.Counts()
	s.othersMu.Unlock()
}

// Subscribe returns a channel of notices and a func that unsubscribes. A
// subscriber that falls behind loses notices rather than blocking passes.
func (s *Scheduler) Subscribe() (<-chan Notice, func()) {
	return s.subs.Subscribe(noticeBuffer)
}

// publish sends n, with the current status, to every subscriber; one
// that fell behind loses its oldest notice, never this one.
func (s *Scheduler) publish(n Notice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Seq++
	n.Status = s.st
	n.Status.Events = s.e.EventStream()
	s.countOthers(&n.Status)
	s.subs.Publish(n)
}

// SendNewest sends v on ch without blocking. When ch is full it drops the
// oldest value to make room: a subscriber that falls behind (a slow
// screen, a loaded machine) misses intermediate notices, never the last
// one, whose status (a pass ended, its report) it would otherwise show
// as stale until the next. Only the sender may call it for a given ch.
func SendNewest[T any](ch chan T, v T) {
	for range 2 {
		select {
		case ch <- v:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
