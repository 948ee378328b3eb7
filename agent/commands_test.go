package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/engine"
)

// fakeRunner records the scheduler calls the commands make.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
	err   error
	st    engine.Status
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

func (f *fakeRunner) Pause(ctx context.Context, p engine.Pause) error {
	f.record("pause")
	f.mu.Lock()
	defer f.mu.Unlock()
	who, _ := ctx.Value(testActor{}).(string)
	f.st.Paused, f.st.PausedBy, f.st.PausedSince, f.st.PausedUntil = true, who, t0, p.Until
	return nil
}

func (f *fakeRunner) Resume(context.Context) error {
	f.record("resume")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = engine.Status{}
	return nil
}

func (f *fakeRunner) Status() engine.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

// testActor is the fake scheduler's context key for who asks.
type testActor struct{}

// pauseLocally pauses as the node's own dashboard would.
func (f *fakeRunner) pauseLocally() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = engine.Status{Paused: true, PausedBy: "uid 0 pid 1 (nodegc)", PausedSince: t0}
}

func (f *fakeRunner) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// newTestCommander returns a commander on a fake scheduler and a writer
// on a fake store that reads the fake scheduler's status.
func newTestCommander(t *testing.T) (*commander, *fakeRunner, *objectWriter) {
	w, _, _ := newTestWriter()
	r := &fakeRunner{}
	w.sched = r.Status
	c := &commander{sched: r, w: w, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return t0 }, ctx: t.Context(),
		withActor: func(ctx context.Context, who string) context.Context { return context.WithValue(ctx, testActor{}, who) }}
	t.Cleanup(c.stop)
	return c, r, w
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
	c, r, w := newTestCommander(t)
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

// TestCommandPause: a pause from the object pauses the periodic passes
// until its Until (the scheduler ends it then), in the name of who asked,
// and the status shows who, the ID and until when; removing it resumes
// them, unless the pause in force is no longer the object's (the node's
// own dashboard paused since); one already expired does nothing.
func TestCommandPause(t *testing.T) {
	c, r, w := newTestCommander(t)
	until := metav1.NewTime(t0.Add(10 * time.Minute))
	pause := &v1alpha1.PauseCommand{ID: "p1", Until: until, By: "alice"}
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pause: pause}, ""))
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pause: pause}, ""))
	if got := r.got(); !slices.Equal(got, []string{"pause"}) {
		t.Fatalf("calls %v, want one pause", got)
	}
	if st := r.Status(); !st.PausedUntil.Equal(until.Time) || st.PausedBy != "alice (NodeGC pause p1)" {
		t.Errorf("the scheduler's pause: until %v by %q", st.PausedUntil, st.PausedBy)
	}
	p := w.status(t0).Paused
	if p == nil || p.ID != "p1" || p.By != "alice" || p.Until == nil || !p.Until.Time.Equal(until.Time) || !p.Since.Time.Equal(t0) {
		t.Errorf("paused %+v", p)
	}
	c.handle(withSpec(v1alpha1.NodeGCSpec{}, ""))
	if got := r.got(); !slices.Equal(got, []string{"pause", "resume"}) || w.status(t0).Paused != nil {
		t.Errorf("calls %v, paused %+v: want a resume when the pause is removed", got, w.status(t0).Paused)
	}

	c.handle(withSpec(v1alpha1.NodeGCSpec{Pause: &v1alpha1.PauseCommand{ID: "p2", Until: until, By: "bob"}}, ""))
	r.pauseLocally()
	c.handle(withSpec(v1alpha1.NodeGCSpec{}, ""))
	if got := r.got(); !slices.Equal(got, []string{"pause", "resume", "pause"}) {
		t.Errorf("calls %v: the object's removed pause ended the node's own", got)
	}
	if p := w.status(t0).Paused; p == nil || p.ID != "" || p.By != "uid 0 pid 1 (nodegc)" {
		t.Errorf("paused %+v, want the node's own pause", p)
	}
	r.st = engine.Status{}
	c.handle(withSpec(v1alpha1.NodeGCSpec{Pause: &v1alpha1.PauseCommand{ID: "p3", Until: metav1.NewTime(t0.Add(-time.Second)), By: "bob"}}, ""))
	if got := r.got(); len(got) != 3 {
		t.Errorf("calls %v: an expired pause paused", got)
	}
}

// TestClipCutsOnARuneBoundary: a status string cut to the CRD's bound
// keeps whole runes, so what a reader sees is valid UTF-8 and no longer
// than the bound.
func TestClipCutsOnARuneBoundary(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short enough is kept", "alice", 128, "alice"},
		{"ASCII is cut at the bound", "abcdef", 4, "abcd"},
		{"a two-byte rune across the bound is left out", "abcé", 4, "abc"},
		{"a four-byte rune across the bound is left out", "ab\U0001F600", 4, "ab"},
		{"a rune ending at the bound is kept", "abé", 4, "abé"},
		{"a name of 100 é cut to 127 bytes is 63 of them", strings.Repeat("é", 100), 127, strings.Repeat("é", 63)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clip(tc.in, tc.n)
			if got != tc.want || !utf8.ValidString(got) || len(got) > tc.n {
				t.Errorf("clip(%q, %d) = %q, want %q (valid UTF-8, at most %d bytes)", tc.in, tc.n, got, tc.want, tc.n)
			}
		})
	}
}
