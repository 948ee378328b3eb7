package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/metrics"
)

var nodeGCs = schema.GroupResource{Group: v1alpha1.Group, Resource: v1alpha1.Resource}

// fakeStore is an API server holding one Node and at most one NodeGC,
// with resource versions, as objectStore.
type fakeStore struct {
	node    corev1.Node
	obj     *v1alpha1.NodeGC
	rv      int
	creates int
	writes  []v1alpha1.NodeGCStatus
	// fail, when set, is the answer to the next calls.
	fail error
}

func (f *fakeStore) Node(_ context.Context, name string) (*corev1.Node, error) {
	if name != f.node.Name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
	}
	n := f.node
	return &n, nil
}

func (f *fakeStore) Get(_ context.Context, name string) (*v1alpha1.NodeGC, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	if f.obj == nil || f.obj.Name != name {
		return nil, apierrors.NewNotFound(nodeGCs, name)
	}
	o := *f.obj
	return &o, nil
}

func (f *fakeStore) Create(_ context.Context, obj *v1alpha1.NodeGC) (*v1alpha1.NodeGC, error) {
	if f.obj != nil {
		return nil, apierrors.NewAlreadyExists(nodeGCs, obj.Name)
	}
	f.creates++
	f.rv++
	o := *obj
	o.ResourceVersion, o.Status = strconv.Itoa(f.rv), v1alpha1.NodeGCStatus{}
	f.obj = &o
	c := o
	return &c, nil
}

func (f *fakeStore) UpdateStatus(_ context.Context, obj *v1alpha1.NodeGC) (*v1alpha1.NodeGC, error) {
	switch {
	case f.fail != nil:
		return nil, f.fail
	case f.obj == nil:
		return nil, apierrors.NewNotFound(nodeGCs, obj.Name)
	case obj.ResourceVersion != f.obj.ResourceVersion:
		return nil, apierrors.NewConflict(nodeGCs, obj.Name, errors.New("the object has been modified"))
	}
	f.rv++
	f.obj.ResourceVersion, f.obj.Status = strconv.Itoa(f.rv), obj.Status
	f.writes = append(f.writes, obj.Status)
	o := *f.obj
	return &o, nil
}

// modify changes the object as another writer would (a command in spec).
func (f *fakeStore) modify() {
	f.rv++
	f.obj.ResourceVersion = strconv.Itoa(f.rv)
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// newTestWriter returns a writer of node-a's object on a fake store, and
// the summary it reads, to change.
func newTestWriter() (*objectWriter, *fakeStore, *metrics.Summary) {
	st := &fakeStore{node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: types.UID("uid-a")}}}
	sum := &metrics.Summary{Node: "node-a", Version: "v1", UsagePercent: 50, High: 85, Low: 80, DeadContainers: 3,
		ImageFs:   &engine.FsStats{CapacityBytes: 1000, AvailableBytes: 500},
		PodSource: "synced", EventStream: "live"}
	w := &objectWriter{store: st, node: "node-a", log: slog.New(slog.NewTextHandler(io.Discard, nil)), started: t0,
		summary: func() metrics.Summary { return *sum }, sched: func() engine.Status { return engine.Status{} }, backoff: objectBackoff}
	return w, st, sum
}

func TestObjectCreatedOwnedByItsNode(t *testing.T) {
	w, st, _ := newTestWriter()
	if d := w.step(t.Context(), t0); d != ObjectInterval {
		t.Errorf("next look in %v, want %v", d, ObjectInterval)
	}
	if st.creates != 1 || len(st.writes) != 1 {
		t.Fatalf("%d creates, %d writes; want 1 and 1", st.creates, len(st.writes))
	}
	refs := st.obj.OwnerReferences
	if len(refs) != 1 || refs[0].APIVersion != "v1" || refs[0].Kind != "Node" || refs[0].Name != "node-a" || refs[0].UID != "uid-a" {
		t.Errorf("owner references %+v, want the Node node-a by its UID", refs)
	}
	got := st.obj.Status
	if got.HeartbeatTime == nil || !got.HeartbeatTime.Time.Equal(t0) || got.ImageFs == nil || got.ImageFs.UsagePercent != 50 ||
		got.Band != (v1alpha1.Band{High: 85, Low: 80}) || got.DeadContainers == nil || *got.DeadContainers != 3 || got.PodSource != "synced" {
		t.Errorf("status %+v", got)
	}
}

// TestObjectWrittenOnChangeAndHeartbeat: nothing is written while nothing
// shown changes, until the heartbeat; a change is written, but never
// sooner than ObjectInterval after the last write.
func TestObjectWrittenOnChangeAndHeartbeat(t *testing.T) {
	w, st, sum := newTestWriter()
	ctx := t.Context()
	w.step(ctx, t0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	sum.ImageFs = &engine.FsStats{CapacityBytes: 1000, AvailableBytes: 499} // still 50%
	for _, d := range []time.Duration{ObjectInterval, time.Minute, ObjectHeartbeat - time.Second} {
		w.step(ctx, at(d))
	}
	if len(st.writes) != 1 {
		t.Fatalf("%d writes with nothing shown changed before the heartbeat, want 1", len(st.writes))
	}
	w.step(ctx, at(ObjectHeartbeat))
	if len(st.writes) != 2 || !st.obj.Status.HeartbeatTime.Time.Equal(at(ObjectHeartbeat)) {
		t.Fatalf("%d writes, heartbeat %v: want the heartbeat written at %v", len(st.writes), st.obj.Status.HeartbeatTime, at(ObjectHeartbeat))
	}
	if st.obj.Status.ImageFs.AvailableBytes != 499 {
		t.Errorf("the heartbeat carries available bytes %d, want the latest (499)", st.obj.Status.ImageFs.AvailableBytes)
	}

	sum.DeadContainers = 4
	if d := w.step(ctx, at(ObjectHeartbeat+time.Second)); d != ObjectInterval-time.Second || len(st.writes) != 2 {
		t.Fatalf("a change 1 s after a write: next look in %v, %d writes; want %v and no write", d, len(st.writes), ObjectInterval-time.Second)
	}
	w.step(ctx, at(ObjectHeartbeat+ObjectInterval))
	if len(st.writes) != 3 || *st.obj.Status.DeadContainers != 4 {
		t.Fatalf("%d writes, dead %d: want the change written once the interval passed", len(st.writes), *st.obj.Status.DeadContainers)
	}
}

// TestObjectQuietPassesRideAlong: a periodic pass that removed nothing
// and ended as the one before is not a change; one that removed is.
func TestObjectQuietPassesRideAlong(t *testing.T) {
	w, st, _ := newTestWriter()
	ctx := t.Context()
	containerPass := func(at time.Time, removed int) engine.PassReport {
		r := engine.PassReport{ID: 1, Kind: engine.PassContainers, StartedAt: at, FinishedAt: at}
		for i := range removed {
			r.Items = append(r.Items, engine.ItemResult{Kind: engine.ItemContainer, ID: fmt.Sprint(i), Outcome: engine.OutcomeRemoved})
		}
		return r
	}
	w.observe(containerPass(t0, 0))
	w.step(ctx, t0)
	w.observe(containerPass(t0.Add(time.Minute), 0))
	w.step(ctx, t0.Add(time.Minute))
	if len(st.writes) != 1 {
		t.Fatalf("%d writes after a quiet pass like the one before, want 1", len(st.writes))
	}
	w.observe(containerPass(t0.Add(2*time.Minute), 2))
	w.step(ctx, t0.Add(2*time.Minute))
	if len(st.writes) != 2 {
		t.Fatalf("%d writes after a pass that removed 2, want 2", len(st.writes))
	}
	p := st.obj.Status.LastContainerPass
	if p == nil || p.Removed != 2 || p.Result != "ok" || p.Trigger != "periodic" || !p.At.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("last container pass %+v", p)
	}
	if st.obj.Status.LastImagePass != nil {
		t.Errorf("a container pass set the last image pass: %+v", st.obj.Status.LastImagePass)
	}
}

// TestObjectWriteSurvivesOthers: a status write after the object changed
// (a command in its spec) or vanished is retried at once on the object as
// it is now.
func TestObjectWriteSurvivesOthers(t *testing.T) {
	w, st, sum := newTestWriter()
	ctx := t.Context()
	w.step(ctx, t0)
	st.modify()
	sum.DeadContainers = 5
	w.step(ctx, t0.Add(ObjectInterval))
	if len(st.writes) != 2 || *st.obj.Status.DeadContainers != 5 {
		t.Fatalf("after a conflict: %d writes, want 2", len(st.writes))
	}
	st.obj = nil
	sum.DeadContainers = 6
	w.step(ctx, t0.Add(2*ObjectInterval))
	if st.creates != 2 || len(st.writes) != 3 || st.obj == nil || *st.obj.Status.DeadContainers != 6 {
		t.Fatalf("after a delete: %d creates, %d writes; want the object made again and written", st.creates, len(st.writes))
	}
}

// TestObjectFailureBacksOff: a write that fails waits out a growing
// delay, and the next write after it goes through.
func TestObjectFailureBacksOff(t *testing.T) {
	w, st, _ := newTestWriter()
	ctx := t.Context()
	st.fail = apierrors.NewForbidden(nodeGCs, "node-a", errors.New("denied"))
	d1 := w.step(ctx, t0)
	d2 := w.step(ctx, t0.Add(d1))
	if d1 <= 0 || d2 <= d1 {
		t.Errorf("delays %v then %v, want growing ones", d1, d2)
	}
	if d := w.step(ctx, t0.Add(d1+time.Millisecond)); d <= 0 || len(st.writes) != 0 {
		t.Errorf("a step before the delay ended: next in %v, %d writes", d, len(st.writes))
	}
	st.fail = nil
	w.step(ctx, t0.Add(d1+d2))
	if len(st.writes) != 1 {
		t.Errorf("%d writes once the API server answers, want 1", len(st.writes))
	}
}

// TestObjectPauseIsWrittenAtOnce: a pause and its end are changes.
func TestObjectPauseIsWrittenAtOnce(t *testing.T) {
	w, st, _ := newTestWriter()
	ctx := t.Context()
	w.step(ctx, t0)
	w.sched = func() engine.Status {
		return engine.Status{Paused: true, PausedBy: "uid 0 pid 9", PausedSince: t0.Add(time.Second)}
	}
	w.step(ctx, t0.Add(ObjectInterval))
	w.step(ctx, t0.Add(2*ObjectInterval))
	p := st.obj.Status.Paused
	if len(st.writes) != 2 || p == nil || !p.Since.Time.Equal(t0.Add(time.Second)) || p.By != "uid 0 pid 9" || p.Until != nil {
		t.Fatalf("%d writes, paused %+v: want one write, paused since the scheduler says", len(st.writes), p)
	}
	w.sched = func() engine.Status { return engine.Status{} }
	w.step(ctx, t0.Add(3*ObjectInterval))
	if st.obj.Status.Paused != nil {
		t.Errorf("paused %+v after a resume", st.obj.Status.Paused)
	}
}

// TestObjectPassThatRemovedIsShown: passes come every few seconds and
// writes at most every ObjectInterval; a pass that removed is written
// even when quiet ones followed it before the write, and a skipped pass
// (it listed nothing) never replaces one that ran.
func TestObjectPassThatRemovedIsShown(t *testing.T) {
	w, st, _ := newTestWriter()
	ctx := t.Context()
	report := func(at time.Time, removed int, skipped string) engine.PassReport {
		r := engine.PassReport{ID: 1, Kind: engine.PassContainers, StartedAt: at, FinishedAt: at, Skipped: skipped}
		for i := range removed {
			r.Items = append(r.Items, engine.ItemResult{Kind: engine.ItemContainer, ID: fmt.Sprint(i), Outcome: engine.OutcomeRemoved})
		}
		return r
	}
	w.step(ctx, t0)
	w.observe(report(t0.Add(time.Second), 3, ""))
	w.observe(report(t0.Add(2*time.Second), 0, ""))
	w.observe(report(t0.Add(3*time.Second), 0, "unchanged"))
	w.step(ctx, t0.Add(ObjectInterval))
	if p := st.obj.Status.LastContainerPass; p == nil || p.Removed != 3 {
		t.Fatalf("last container pass %+v, want the one that removed 3", p)
	}
	w.observe(report(t0.Add(6*time.Second), 0, ""))
	w.observe(report(t0.Add(7*time.Second), 0, "unchanged"))
	w.step(ctx, t0.Add(ObjectInterval+ObjectHeartbeat))
	if p := st.obj.Status.LastContainerPass; p == nil || p.Removed != 0 || p.Result != "ok" || !p.At.Time.Equal(t0.Add(6*time.Second)) {
		t.Errorf("last container pass %+v, want the latest that ran, once the one that removed was written", p)
	}
}

// TestObjectForecastWrittenWhenItMoves: the eviction forecast goes into
// the status with its times rounded; made again every 10 s on a steady
// fill it is no write, and one that moves by more than its step, or
// stops filling, is.
func TestObjectForecastWrittenWhenItMoves(t *testing.T) {
	w, st, _ := newTestWriter()
	ctx := t.Context()
	ev := &forecast.Forecast{Line: forecast.LineEviction, Status: forecast.StatusFilling, At: t0,
		Estimate: 3 * 3600, Lower: 2.5 * 3600, Upper: math.Inf(1)}
	w.forecast = func() *forecast.Forecast { c := *ev; return &c }
	w.step(ctx, t0)
	got := st.obj.Status.Forecast
	// 3 h away: steps of 10 minutes (a tenth of the distance at most).
	if got == nil || got.Status != "filling" || got.At == nil || !got.At.Time.Equal(t0.Add(3*time.Hour)) ||
		got.Earliest == nil || !got.Earliest.Time.Equal(t0.Add(2*time.Hour+30*time.Minute)) || got.Latest != nil {
		t.Fatalf("forecast %+v, want filling at t0+3h, earliest t0+2h30m, no latest", got)
	}
	// A steady fill: each reading 10 s later, its estimate 10 s shorter,
	// give or take two minutes around a step's midpoint (t0+3h05m), where
	// rounding alone would flip between two steps.
	for i := 1; i <= 25; i++ { // until the heartbeat is due
		ev.At = t0.Add(time.Duration(i) * 10 * time.Second)
		ev.Estimate = 3*3600 + 300 - float64(i)*10 + float64(i%3-1)*120
		w.step(ctx, ev.At.Add(ObjectInterval))
	}
	if len(st.writes) != 1 {
		t.Fatalf("%d writes of a steady forecast in 4 minutes, want 1: %+v", len(st.writes), st.obj.Status.Forecast)
	}
	ev.Estimate = 2 * 3600 // an hour sooner
	w.step(ctx, ev.At.Add(time.Minute))
	if len(st.writes) != 2 || !st.obj.Status.Forecast.At.Time.Equal(ev.At.Add(2*time.Hour).Round(10*time.Minute)) {
		t.Fatalf("%d writes, forecast %+v: want the forecast an hour sooner written", len(st.writes), st.obj.Status.Forecast)
	}
	ev.Estimate, ev.Lower = 500*365*24*3600, 400*365*24*3600 // past what a time.Duration holds
	w.step(ctx, ev.At.Add(2*time.Minute))
	if f := st.obj.Status.Forecast; len(st.writes) != 3 || f.Status != "filling" || f.At != nil || f.Earliest != nil {
		t.Fatalf("%d writes, forecast %+v: want filling written without times, centuries away", len(st.writes), f)
	}
	ev.Status, ev.Estimate = forecast.StatusNotFilling, math.Inf(1)
	w.step(ctx, ev.At.Add(3*time.Minute))
	if f := st.obj.Status.Forecast; len(st.writes) != 4 || f.Status != "not-filling" || f.At != nil || f.Earliest != nil {
		t.Fatalf("%d writes, forecast %+v: want not-filling written, without times", len(st.writes), f)
	}
}
