package nodeevents

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// step is an event at a minute, or a tick when ev is nil.
type step struct {
	min float64
	ev  *Event
}

var (
	gcImages     = &Event{Type: "Normal", Reason: ReasonGarbageCollected, Action: ActionImageGC, Note: "images"}
	gcContainers = &Event{Type: "Normal", Reason: ReasonGarbageCollected, Action: ActionContainerGC, Note: "containers"}
	freeFailed   = &Event{Type: "Warning", Reason: "FreeDiskSpaceFailed", Action: ActionImageGC, Note: "insufficient"}
)

// every is ev each minute from from to to (inclusive), a tick after each.
func every(ev *Event, from, to int) []step {
	var out []step
	for m := from; m <= to; m++ {
		out = append(out, step{float64(m), ev}, step{float64(m) + 0.5, nil})
	}
	return out
}

// TestSeriesCountRepeats pins client-go's series (tools/events
// event_broadcaster.go recordToSink, finishSeries, refreshExistingEventSeries)
// as the writes they make: "create R" or "patch R N".
func TestSeriesCountRepeats(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		want  []string
	}{
		{
			name:  "one event is one create, and nothing more",
			steps: []step{{0, gcImages}, {1, nil}, {7, nil}, {40, nil}},
			want:  []string{"create ImageGC"},
		},
		{
			name:  "the first repeat patches the series at once (count 2); later ones count, written when the series ends 6 minutes after the last",
			steps: append(every(gcContainers, 0, 4), step{9.9, nil}, step{10, nil}, step{11, nil}),
			want:  []string{"create ContainerGC", "patch ContainerGC 2", "patch ContainerGC 5"},
		},
		{
			name:  "a series that goes on is written every 30 minutes, and at its end",
			steps: append(every(gcContainers, 0, 64), step{71, nil}),
			want:  []string{"create ContainerGC", "patch ContainerGC 2", "patch ContainerGC 32", "patch ContainerGC 62", "patch ContainerGC 65"},
		},
		{
			name:  "another action or reason is a series of its own",
			steps: []step{{0, gcImages}, {0, gcContainers}, {0, freeFailed}, {1, gcImages}, {1, freeFailed}},
			want:  []string{"create ImageGC", "create ContainerGC", "create ImageGC", "patch ImageGC 2", "patch ImageGC 2"},
		},
		{
			name:  "after 6 minutes without a repeat, the same event is a new one",
			steps: []step{{0, gcImages}, {6, nil}, {6.5, gcImages}},
			want:  []string{"create ImageGC", "create ImageGC"},
		},
		{
			name:  "a series that ended is not written again when its count did not change",
			steps: []step{{0, gcImages}, {1, gcImages}, {7, nil}, {8, nil}},
			want:  []string{"create ImageGC", "patch ImageGC 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replay(newRecorder(Options{NodeName: "n"}), tt.steps)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// replay feeds the steps to r's correlator and words its writes.
func replay(r *Recorder, steps []step) []string {
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	var out []string
	word := func(w write) {
		if w.create {
			out = append(out, "create "+w.ev.Action)
			return
		}
		out = append(out, fmt.Sprintf("patch %s %d", w.ev.Action, w.ev.Series.Count))
	}
	for _, s := range steps {
		now := t0.Add(time.Duration(s.min * float64(time.Minute)))
		if s.ev == nil {
			for _, w := range r.series.tick(now) {
				word(w)
			}
			continue
		}
		if w, ok, _ := r.series.observe(*s.ev, now, r.build); ok {
			word(w)
		}
	}
	return out
}

// TestSpamBoundIsTheKubelets: new event objects about the node pass 25 at
// once, then one every 5 minutes (client-go record's defaultSpamBurst
// and defaultSpamQPS, the kubelet's correlator).
func TestSpamBoundIsTheKubelets(t *testing.T) {
	r := newRecorder(Options{NodeName: "n"})
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	created := func(at time.Time, n int) int {
		c := 0
		for i := range n {
			ev := Event{Type: "Warning", Reason: fmt.Sprintf("R%d-%d", at.Unix(), i), Action: ActionImageGC}
			if w, ok, _ := r.series.observe(ev, at, r.build); ok && w.create {
				c++
			}
		}
		return c
	}
	if n := created(t0, 30); n != 25 {
		t.Errorf("%d of 30 new events at once were created, want 25", n)
	}
	if n := created(t0.Add(4*time.Minute), 3); n != 0 {
		t.Errorf("%d created 4 minutes later, want 0", n)
	}
	if n := created(t0.Add(5*time.Minute), 3); n != 1 {
		t.Errorf("%d created 5 minutes later, want 1", n)
	}
}

// TestRecorderPatchesTheSeries: through the API, a repeat is a PATCH of
// the first event's series (a strategic merge patch of the series alone),
// and the stop writes the count not yet sent.
func TestRecorderPatchesTheSeries(t *testing.T) {
	api := &apiServer{}
	r, _ := api.start(t)
	for range 4 {
		r.Report(failingPass)
	}
	r.Stop(context.Background())
	api.mu.Lock()
	defer api.mu.Unlock()
	var posts, patches []string
	for i, p := range api.paths {
		if strings.HasPrefix(p, "POST ") {
			posts = append(posts, p)
			continue
		}
		patches = append(patches, p+" "+api.bodies[i])
	}
	if len(posts) != 2 {
		t.Errorf("%d events created, want 2 (the warning and the Normal event): %v", len(posts), api.paths)
	}
	first := api.events[0].Name
	want := []string{
		fmt.Sprintf(`PATCH /apis/events.k8s.io/v1/namespaces/default/events/%s {"series":{"count":2,"lastObservedTime":"2026-03-04T05:06:07.000008Z"}}`, first),
		fmt.Sprintf(`PATCH /apis/events.k8s.io/v1/namespaces/default/events/%s {"series":{"count":2,"lastObservedTime":"2026-03-04T05:06:07.000008Z"}}`, api.events[1].Name),
		fmt.Sprintf(`PATCH /apis/events.k8s.io/v1/namespaces/default/events/%s {"series":{"count":4,"lastObservedTime":"2026-03-04T05:06:07.000008Z"}}`, first),
		fmt.Sprintf(`PATCH /apis/events.k8s.io/v1/namespaces/default/events/%s {"series":{"count":4,"lastObservedTime":"2026-03-04T05:06:07.000008Z"}}`, api.events[1].Name),
	}
	if strings.Join(patches, "\n") != strings.Join(want, "\n") {
		t.Errorf("patches:\n%s\nwant:\n%s", strings.Join(patches, "\n"), strings.Join(want, "\n"))
	}
}

// TestSeriesOfAGoneEventIsCreatedAgain: when the event has expired (the
// API server's 1-hour TTL), its series' write creates it again with the
// count, as client-go does.
func TestSeriesOfAGoneEventIsCreatedAgain(t *testing.T) {
	api := &apiServer{patchStatus: http.StatusNotFound}
	r, _ := api.start(t)
	r.Report(failingPass)
	r.Report(failingPass)
	r.Stop(context.Background())
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.events) != 4 || api.events[2].Series == nil || api.events[2].Series.Count != 2 || api.events[2].Name != api.events[0].Name {
		t.Fatalf("requests %v; want 2 creates, then each series created again with count 2 under its name", api.paths)
	}
}
