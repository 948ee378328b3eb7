package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/engine"
)

// fakeRunner records the scheduler calls the commands make.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (f *fakeRunner) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeRunner) Force(_ context.Context, kind engine.PassKind) (engine.PassReport, error) {
	f.record("force " + string(kind))
	r := engine.PassReport{ID: 7, Kind: kind, Forced: true, FinishedAt: t0,
		Items: []engine.ItemResult{{Kind: engine.ItemContainer, ID: "c1", Outcome: engine.OutcomeRemoved}}}
	return r, f.err
}

func (f *fakeRunner) Preview(_ context.Context, kind engine.PassKind) (engine.PassReport, error) {
	f.record("preview " + string(kind))
	return engine.PassReport{Kind: kind, DryRun: true, FinishedAt: t0,
		Items: []engine.ItemResult{{Kind: engine.ItemImage, ID: "i1", Outcome: engine.OutcomePlanned}}}, f.err
}

func (f *fakeRunner) Pause()  { f.record("pause") }
func (f *fakeRunner) Resume() { f.record("resume") }

func (f *fakeRunner) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// timerCall is a timer the commander set on the test's clock.
type timerCall struct {
	d  time.Duration
	fn func()
}

// newTestCommander returns a commander on a fake scheduler, a writer on
// a fake store, and the timers it sets.
func newTestCommander(t *testing.T) (*commander, *fakeRunner, *objectWriter, *[]timerCall) {
	w, _, sum := newTestWriter()
	sum.Paused = true // the scheduler's state, as the collector has it
	r := &fakeRunner{}
	var timers []timerCall
	c := &commander{sched: r, w: w, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return t0 }, ctx: t.Context(),
		afterFunc: func(d time.Duration, fn func()) *time.Timer {
			timers = append(timers, timerCall{d, fn})
			return time.NewTimer(time.Hour) // stopped by the commander, never fired
		}}
	t.Cleanup(c.stop)
	return c, r, w, &timers
}

func withSpec(spec v1alpha1.NodeGCSpec, acked string) *v1alpha1.NodeGC {
	o := &v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: spec}
	if acked != "" {
		o.Status.Command = &v1alpha1.CommandOutcome{ID: acked, Result: CommandDone}
	}
	return o
}

// TestCommandPassRunsOncePerID: a pass asked in the spec runs once per
// ID, its outcome in the status; an ID the status already acknowledges
// (the agent restarted) does not run again; a preview makes no removal
// call; a kind the agent does not know is refused.
func TestCommandPassRunsOncePerID(t *testing.T) {
	c, r, w, _ := newTestCommander(t)
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pass: &v1alpha1.PassCommand{ID: "a", Kind: "full", By: "alice"}}, "a"))
	c.running.Wait()
	if got := r.got(); len(got) != 0 {
		t.Fatalf("a pass the status acknowledged ran again: %v", got)
	}
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pass: &v1alpha1.PassCommand{ID: "b", Kind: "containers", By: "alice"}}, "a"))
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pass: &v1alpha1.PassCommand{ID: "b", Kind: "containers", By: "alice"}}, "a"))
	c.running.Wait()
	st := w.status(t0)
	if got := r.got(); !slices.Equal(got, []string{"force containers"}) {
		t.Errorf("calls %v, want one forced container pass", got)
	}
	if o := st.Command; o == nil || o.ID != "b" || o.Result != CommandDone || o.Pass == nil || o.Pass.Removed != 1 || o.Pass.Trigger != "forced" {
		t.Errorf("command outcome %+v", o)
	}

	c.handle(withSpec(v1alpha1.NodeGCSpec{Pass: &v1alpha1.PassCommand{ID: "c", Kind: "images", Preview: true, By: "bob"}}, ""))
	c.running.Wait()
	if got := r.got(); !slices.Equal(got, []string{"force containers", "preview images"}) {
		t.Errorf("calls %v, want a preview", got)
	}
	if o := w.status(t0).Command; o == nil || o.ID != "c" || o.Pass == nil || o.Pass.Result != "preview" || o.Pass.Removed != 1 {
		t.Errorf("preview outcome %+v, want the one item it plans", o)
	}

	r.err = errors.New("runtime down")
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pass: &v1alpha1.PassCommand{ID: "d", Kind: "full", By: "bob"}}, ""))
	c.running.Wait()
	if o := w.status(t0).Command; o == nil || o.Result != CommandError || o.Message != "runtime down" {
		t.Errorf("failed pass outcome %+v", o)
	}
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pass: &v1alpha1.PassCommand{ID: "e", Kind: "everything", By: "bob"}}, ""))
	c.running.Wait()
	if o := w.status(t0).Command; o == nil || o.ID != "e" || o.Result != CommandRefused || len(r.got()) != 3 {
		t.Errorf("unknown kind: outcome %+v, calls %v", o, r.got())
	}
}

// TestCommandPauseEndsByItself: a pause from the object pauses the
// periodic passes and shows who asked and until when; it ends at its
// Until, or when it is removed; one already expired does nothing.
func TestCommandPauseEndsByItself(t *testing.T) {
	c, r, w, timers := newTestCommander(t)
	until := metav1.NewTime(t0.Add(10 * time.Minute))
	pause := &v1alpha1.PauseCommand{ID: "p1", Until: until, By: "alice"}
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pause: pause}, ""))
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pause: pause}, ""))
	if got := r.got(); !slices.Equal(got, []string{"pause"}) {
		t.Fatalf("calls %v, want one pause", got)
	}
	p := w.status(t0).Paused
	if p == nil || p.ID != "p1" || p.By != "alice" || p.Until == nil || !p.Until.Time.Equal(until.Time) {
		t.Errorf("paused %+v", p)
	}
	if len(*timers) != 1 || (*timers)[0].d != 10*time.Minute {
		t.Fatalf("timers %v, want one at the pause's end", *timers)
	}
	(*timers)[0].fn() // the pause's end comes
	if got := r.got(); !slices.Equal(got, []string{"pause", "resume"}) {
		t.Errorf("calls %v, want a resume at the pause's end", got)
	}
	if w.pauseCmd != nil {
		t.Errorf("the writer still shows the pause %+v", w.pauseCmd)
	}

	c.handle(withSpec(v1alpha1.NodeGCSpec{Pause: &v1alpha1.PauseCommand{ID: "p2", Until: until, By: "bob"}}, ""))
	c.handle(withSpec(v1alpha1.NodeGCSpec{}, ""))
	if got := r.got(); !slices.Equal(got, []string{"pause", "resume", "pause", "resume"}) {
		t.Errorf("calls %v, want a pause, and a resume when it is removed", got)
	}
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pause: &v1alpha1.PauseCommand{ID: "p3", Until: metav1.NewTime(t0.Add(-time.Second)), By: "bob"}}, ""))
	if got := r.got(); len(got) != 4 {
		t.Errorf("calls %v: an expired pause paused", got)
	}
}
