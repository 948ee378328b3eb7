package engine

import (
	"context"
	"errors"
	"time"
)

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	// ImagePeriod and ContainerPeriod default to the kubelet's 5m and 1m.
	ImagePeriod     time.Duration
	ContainerPeriod time.Duration
	// Paused starts the scheduler paused.
	Paused bool
	// Now is the clock; nil means the engine's clock.
	Now func() time.Time
	// After waits for a duration; nil means time.After. Tests inject it.
	After func(time.Duration) <-chan time.Time
}

// Status is the scheduler's state, for the dashboard.
type Status struct {
	Paused bool `json:"paused"`
	// Running is the kind of pass in flight, "" when idle.
	Running           PassKind    `json:"running,omitempty"`
	NextImagePass     time.Time   `json:"nextImagePass"`
	NextContainerPass time.Time   `json:"nextContainerPass"`
	ImageGCDisabled   bool        `json:"imageGCDisabled"`
	LastReport        *PassReport `json:"lastReport,omitempty"`
	Passes            int64       `json:"passes"`
}

// Notice is what subscribers receive: a finished pass, an event, or a
// change of status (pause, resume, a pass starting). Status is always set.
type Notice struct {
	Report *PassReport
	Event  *Event
	Status Status
}

// Scheduler runs container GC and image GC periodically, as the kubelet
// does, and on demand; it can pause, resume and run dry-runs, and it
// publishes reports and events to subscribers.
type Scheduler struct {
	e *Engine
	o SchedulerOptions
}

// NewScheduler returns a scheduler for the engine.
func NewScheduler(e *Engine, o SchedulerOptions) *Scheduler { return &Scheduler{e: e, o: o} }

// Engine returns the scheduler's engine.
func (s *Scheduler) Engine() *Engine { return s.e }

// Run runs periodic passes until ctx is done.
func (s *Scheduler) Run(ctx context.Context) error {
	return errors.New("scheduler: not implemented yet")
}

// Force runs a pass of the kind now, paused or not.
func (s *Scheduler) Force(ctx context.Context, kind PassKind) (PassReport, error) {
	return PassReport{}, errors.New("scheduler: not implemented yet")
}

// Preview runs a dry-run of the kind: a report whose Plan can be applied
// with Apply, and whose items are all OutcomePlanned.
func (s *Scheduler) Preview(ctx context.Context, kind PassKind) (PassReport, error) {
	return PassReport{}, errors.New("scheduler: not implemented yet")
}

// Apply applies exactly the given plan (a previewed one).
func (s *Scheduler) Apply(ctx context.Context, p Plan) (PassReport, error) {
	return PassReport{}, errors.New("scheduler: not implemented yet")
}

// Pause stops periodic passes; forced passes still run.
func (s *Scheduler) Pause() {}

// Resume restarts periodic passes.
func (s *Scheduler) Resume() {}

// Status returns the current state.
func (s *Scheduler) Status() Status { return Status{} }

// Subscribe returns a channel of notices and a func that unsubscribes. A
// subscriber that falls behind loses notices rather than blocking passes.
func (s *Scheduler) Subscribe() (<-chan Notice, func()) {
	ch := make(chan Notice)
	return ch, func() {}
}
