package nodeevents

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
)

// Controller is the events' reportingController.
const Controller = "nodegc"

// Namespace is where the events are created: default, where the kubelet
// creates a Node's events. The agent's RBAC (deploy/rbac.yaml) grants
// creating events there and nowhere else.
const Namespace = metav1.NamespaceDefault

// ReasonGarbageCollected is the reason of the Normal event of a pass that
// removed something.
const ReasonGarbageCollected = "GarbageCollected"

// Actions, the events.k8s.io/v1 field that says what was being done.
const (
	ActionImageGC     = "ImageGC"
	ActionContainerGC = "ContainerGC"
	ActionGC          = "GarbageCollect"
)

// noteLimit is the API server's bound on an event's note (1 kB).
const noteLimit = 1024

// queueSize is how many events may wait to be sent; more are dropped (and
// logged), so an API server that does not answer never holds a pass.
const queueSize = 16

// sendTimeout bounds each request.
const sendTimeout = 10 * time.Second

// Creator creates events and patches their series: a kubeclient.Client.
type Creator interface {
	CreateEvent(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error)
	PatchEvent(ctx context.Context, namespace, name string, patch []byte) (*eventsv1.Event, error)
}

// Options configure a Recorder.
type Options struct {
	// Client sends the events. Required.
	Client Creator
	// NodeName is the Node the events are about, as the kubelet names
	// it. Required.
	NodeName string
	// Log takes a line per event sent, and the failures.
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Tick, when set, replaces the one-minute ticker at which the
	// series' counts are written (for tests).
	Tick <-chan time.Time
}

// Event is one event about the node, before it is sent.
type Event struct {
	Type   string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason string
	Action string
	Note   string
}

// Recorder sends events about one node in the background, in order,
// each repeat counted on its first event's series.
type Recorder struct {
	o     Options
	queue chan Event
	done  chan struct{}
	once  sync.Once
	// series is owned by run's goroutine.
	series *correlator

	// failing is true after a failed send, until one succeeds: only
	// the first failure of a run of them is a warning.
	failing bool
	// last is the time in the last event's name (UnixNano), kept so
	// that two events in the same nanosecond (a coarse clock) still get
	// two names.
	last int64
}

// Start starts a recorder; Stop ends it. A nil client gives a nil
// recorder, whose methods do nothing: no API server, no events.
func Start(o Options) *Recorder {
	if o.Client == nil || o.NodeName == "" {
		return nil
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := newRecorder(o)
	go r.run()
	return r
}

// newRecorder returns a recorder that is not running.
func newRecorder(o Options) *Recorder {
	return &Recorder{o: o, queue: make(chan Event, queueSize), done: make(chan struct{}), series: newCorrelator()}
}

// Report queues the events of a real pass (Of); it never blocks.
func (r *Recorder) Report(rep engine.PassReport) {
	if r == nil || rep.DryRun {
		return
	}
	for _, ev := range Of(rep) {
		select {
		case r.queue <- ev:
		default:
			r.o.Log.Warn("node event dropped: the API server is behind", "reason", ev.Reason, "pass", rep.PassID())
		}
	}
}

// Stop sends what is queued, each within its timeout, and returns when
// done or when ctx ends.
func (r *Recorder) Stop(ctx context.Context) {
	if r == nil {
		return
	}
	r.once.Do(func() { close(r.queue) })
	select {
	case <-r.done:
	case <-ctx.Done():
	}
}

func (r *Recorder) run() {
	defer close(r.done)
	tick := r.o.Tick
	if tick == nil {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case ev, ok := <-r.queue:
			if !ok {
				r.sendAll(r.series.flush(r.o.Now()))
				return
			}
			r.handle(ev)
		case <-tick:
			r.sendAll(r.series.tick(r.o.Now()))
		}
	}
}

// handle sends what ev calls for: a new event, a series' first count,
// or nothing.
func (r *Recorder) handle(ev Event) {
	w, ok, dropped := r.series.observe(ev, r.o.Now(), r.build)
	if dropped {
		r.o.Log.Warn("node event dropped: more than the kubelet's bound of events about one node", "reason", ev.Reason)
	}
	if ok {
		r.send(w)
	}
}

// sendAll sends each write.
func (r *Recorder) sendAll(ws []write) {
	for _, w := range ws {
		r.send(w)
	}
}

// build makes the event object of ev at now, named and filled as
// client-go's events recorder does (tools/events/event_recorder.go
// makeEvent).
func (r *Recorder) build(ev Event, now time.Time) *eventsv1.Event {
	r.last = max(now.UnixNano(), r.last+1)
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%v.%x", r.o.NodeName, r.last),
			Namespace: Namespace,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: Controller,
		ReportingInstance:   Controller + "-" + r.o.NodeName,
		Action:              ev.Action,
		Reason:              ev.Reason,
		Regarding:           NodeReference(r.o.NodeName),
		Note:                truncate(ev.Note, noteLimit),
		Type:                ev.Type,
	}
}

// send makes one write. A series whose event is gone (expired, deleted)
// is created again with its count, as client-go's recordEvent does.
func (r *Recorder) send(w write) {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	var err error
	if !w.create {
		_, err = r.o.Client.PatchEvent(ctx, w.ev.Namespace, w.ev.Name, w.patch)
	}
	if w.create || apierrors.IsNotFound(err) {
		_, err = r.o.Client.CreateEvent(ctx, w.ev)
	}
	if err != nil {
		level := slog.LevelWarn
		if r.failing {
			level = slog.LevelDebug
		}
		r.failing = true
		r.o.Log.Log(ctx, level, "node event not sent", "reason", w.ev.Reason, "err", err)
		return
	}
	r.failing = false
	r.o.Log.Debug("node event sent", "reason", w.ev.Reason, "type", w.ev.Type, "name", w.ev.Name, "series", w.ev.Series != nil)
}

// NodeReference is the kubelet's reference to its Node in events
// (pkg/kubelet/kubelet.go NewMainKubelet, nodeRef): the node's name as its
// UID too, which is what `kubectl describe node` looks for.
func NodeReference(nodeName string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: nodeName, UID: types.UID(nodeName)}
}

// Of returns the events a real pass reports on the Node: its warnings
// (the kubelet's reasons), at most one per reason, the first; then one
// Normal GarbageCollected event when it removed anything, with counts
// and bytes, never one per item. The Recorder counts repeats on the
// first event's series.
func Of(r engine.PassReport) []Event {
	var out []Event
	seen := map[string]bool{}
	for _, ev := range r.Events {
		if !ev.Warning || seen[ev.Reason] {
			continue
		}
		seen[ev.Reason] = true
		out = append(out, Event{Type: corev1.EventTypeWarning, Reason: ev.Reason, Action: action(ev.Reason), Note: ev.Message})
	}
	if note, ok := removed(r); ok {
		out = append(out, Event{Type: corev1.EventTypeNormal, Reason: ReasonGarbageCollected, Action: passAction(r.Kind), Note: note})
	}
	return out
}

// passAction is the action of a pass's GarbageCollected event: ImageGC
// for an image pass, ContainerGC for a container pass, GarbageCollect for
// a full pass or a reclaim-all. Each is a series of its own, so the
// container passes every minute never hide what the image passes removed.
func passAction(k engine.PassKind) string {
	switch k {
	case engine.PassImages:
		return ActionImageGC
	case engine.PassContainers:
		return ActionContainerGC
	}
	return ActionGC
}

// action is what the kubelet was doing when it met the reason.
func action(reason string) string {
	if reason == engine.EventContainerGCFailed {
		return ActionContainerGC
	}
	return ActionImageGC
}

// removed words what a pass removed ("removed 3 images (1.2 GiB by the
// runtime's sizes, 1.1 GiB measured on the image filesystem), 5
// containers, 2 sandboxes, 4 log files in pass P"); false when it removed
// nothing.
func removed(r engine.PassReport) (string, bool) {
	counts := map[engine.ItemKind]int{}
	for _, it := range r.Items {
		if it.Outcome == engine.OutcomeRemoved {
			counts[it.Kind]++
		}
	}
	var parts []string
	for _, k := range []struct {
		kind       engine.ItemKind
		one, other string
	}{
		{engine.ItemImage, "image", "images"},
		{engine.ItemContainer, "container", "containers"},
		{engine.ItemSandbox, "sandbox", "sandboxes"},
		{engine.ItemLog, "log file", "log files"},
	} {
		n := counts[k.kind]
		if n == 0 {
			continue
		}
		word := k.other
		if n == 1 {
			word = k.one
		}
		part := fmt.Sprintf("%d %s", n, word)
		if k.kind == engine.ItemImage {
			part += " (" + format.Bytes(r.EstimatedBytesFreed) + " by the runtime's sizes"
			if r.MeasuredBytesFreed != nil {
				part += ", " + format.Bytes(*r.MeasuredBytesFreed) + " measured on the image filesystem"
			}
			part += ")"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "", false
	}
	return fmt.Sprintf("%s pass %s removed %s", r.Kind, r.PassID(), strings.Join(parts, ", ")), true
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
