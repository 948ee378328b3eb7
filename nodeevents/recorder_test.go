package nodeevents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/nodegc/nodegc/internal/proctest"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/rest"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/kubeclient"
)

// items builds n results of one kind and outcome.
func items(kind engine.ItemKind, outcome engine.Outcome, n int) []engine.ItemResult {
	out := make([]engine.ItemResult, n)
	for i := range out {
		out[i] = engine.ItemResult{Kind: kind, Outcome: outcome, ID: string(kind) + string(rune('a'+i))}
	}
	return out
}

func TestOf(t *testing.T) {
	measured := int64(3 << 20)
	warn := func(reason, msg string) engine.Event {
		return engine.Event{Reason: reason, Message: msg, Warning: true}
	}
	tests := []struct {
		name   string
		report engine.PassReport
		want   []Event
	}{
		{
			name:   "a pass that removed nothing and met no failure reports nothing",
			report: engine.PassReport{Run: "r", ID: 1, Kind: engine.PassImages, Items: items(engine.ItemImage, engine.OutcomeSkipped, 2)},
		},
		{
			name: "a pass that removed images reports one Normal event with the count and both byte figures",
			report: engine.PassReport{Run: "r", ID: 2, Kind: engine.PassImages, Items: items(engine.ItemImage, engine.OutcomeRemoved, 3),
				EstimatedBytesFreed: 4 << 20, MeasuredBytesFreed: &measured},
			want: []Event{{Type: "Normal", Reason: "GarbageCollected", Action: "ImageGC",
				Note: "images pass r/2 removed 3 images (4.0 MiB by the runtime's sizes, 3.0 MiB measured on the image filesystem)"}},
		},
		{
			name: "a container pass counts containers, sandboxes and log files, one of each in the singular",
			report: engine.PassReport{Run: "r", ID: 3, Kind: engine.PassContainers, Items: slicesConcat(
				items(engine.ItemContainer, engine.OutcomeRemoved, 5), items(engine.ItemSandbox, engine.OutcomeRemoved, 1),
				items(engine.ItemLog, engine.OutcomeRemoved, 2), items(engine.ItemContainer, engine.OutcomeFailed, 1))},
			want: []Event{{Type: "Normal", Reason: "GarbageCollected", Action: "ContainerGC",
				Note: "containers pass r/3 removed 5 containers, 1 sandbox, 2 log files"}},
		},
		{
			name: "warnings come once per reason, the first, before the Normal event",
			report: engine.PassReport{Run: "r", ID: 4, Kind: engine.PassFull, Items: items(engine.ItemImage, engine.OutcomeRemoved, 1),
				EstimatedBytesFreed: 1024,
				Events: []engine.Event{
					warn(engine.EventFreeDiskSpaceFailed, "first"), warn(engine.EventFreeDiskSpaceFailed, "second"),
					warn(engine.EventImageGCFailed, "gc failed"), warn(engine.EventContainerGCFailed, "container x"),
					{Reason: "Other", Message: "not a warning"},
				}},
			want: []Event{
				{Type: "Warning", Reason: "FreeDiskSpaceFailed", Action: "ImageGC", Note: "first"},
				{Type: "Warning", Reason: "ImageGCFailed", Action: "ImageGC", Note: "gc failed"},
				{Type: "Warning", Reason: "ContainerGCFailed", Action: "ContainerGC", Note: "container x"},
				{Type: "Normal", Reason: "GarbageCollected", Action: "GarbageCollect", Note: "full pass r/4 removed 1 image (1.0 KiB by the runtime's sizes)"},
			},
		},
		{
			name: "invalid capacity is a warning with nothing removed",
			report: engine.PassReport{Run: "r", ID: 5, Kind: engine.PassImages,
				Events: []engine.Event{warn(engine.EventInvalidDiskCapacity, "invalid capacity 0 on image filesystem")}},
			want: []Event{{Type: "Warning", Reason: "InvalidDiskCapacity", Action: "ImageGC", Note: "invalid capacity 0 on image filesystem"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.report); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Of =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func slicesConcat(s ...[]engine.ItemResult) []engine.ItemResult {
	var out []engine.ItemResult
	for _, x := range s {
		out = append(out, x...)
	}
	return out
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	got := truncate(long, noteLimit)
	if len(got) > noteLimit || !strings.HasSuffix(got, "...") || !strings.HasPrefix(long, strings.TrimSuffix(got, "...")) {
		t.Errorf("truncate: %d bytes, %q…", len(got), got[len(got)-8:])
	}
	if got := truncate("short", noteLimit); got != "short" {
		t.Errorf("truncate(short) = %q", got)
	}
}

// apiServer is a fake API server that keeps the events POSTed to it, or
// answers every request with status when it is not 0.
type apiServer struct {
	mu     sync.Mutex
	paths  []string
	bodies []string
	events []eventsv1.Event
	status int
	// patchStatus, when not 0, answers every PATCH (404: NotFound).
	patchStatus int
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.paths = append(a.paths, r.Method+" "+r.URL.Path)
	a.bodies = append(a.bodies, string(body))
	w.Header().Set("Content-Type", "application/json")
	if a.status != 0 {
		w.WriteHeader(a.status)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"events.events.k8s.io is forbidden","reason":"Forbidden","code":403}`)
		return
	}
	if r.Method == http.MethodPatch {
		if a.patchStatus != 0 {
			w.WriteHeader(a.patchStatus)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"events.events.k8s.io not found","reason":"NotFound","code":404}`)
			return
		}
		io.WriteString(w, `{"kind":"Event","apiVersion":"events.k8s.io/v1"}`)
		return
	}
	var ev eventsv1.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	a.events = append(a.events, ev)
	w.WriteHeader(http.StatusCreated)
	w.Write(body)
}

// start serves a and starts a recorder on it, logging into the buffer.
func (a *apiServer) start(t *testing.T) (*Recorder, *bytes.Buffer) {
	t.Helper()
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	kc, err := kubeclient.New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	now := time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)
	r := Start(Options{Client: kc, NodeName: "node-a", Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return r, &logs
}

// failingPass removed 2 images and failed to free enough.
var failingPass = engine.PassReport{Run: "r", ID: 7, Kind: engine.PassImages,
	Items: items(engine.ItemImage, engine.OutcomeRemoved, 2), EstimatedBytesFreed: 2048,
	Events: []engine.Event{{Reason: engine.EventFreeDiskSpaceFailed, Message: "Insufficient free disk space", Warning: true}}}

func TestRecorderSendsEventsOnTheNode(t *testing.T) {
	api := &apiServer{}
	r, _ := api.start(t)
	r.Report(failingPass)
	r.Report(engine.PassReport{DryRun: true, Items: items(engine.ItemImage, engine.OutcomeRemoved, 1)})
	r.Stop(context.Background())

	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.events) != 2 {
		t.Fatalf("%d events sent (%v), want the warning and the Normal event of the real pass only", len(api.events), api.paths)
	}
	for i, want := range []struct{ typ, reason, action, note string }{
		{"Warning", "FreeDiskSpaceFailed", "ImageGC", "Insufficient free disk space"},
		{"Normal", "GarbageCollected", "ImageGC", "images pass r/7 removed 2 images (2.0 KiB by the runtime's sizes)"},
	} {
		ev := api.events[i]
		if api.paths[i] != "POST /apis/events.k8s.io/v1/namespaces/default/events" {
			t.Errorf("event %d sent to %s", i, api.paths[i])
		}
		if ev.Type != want.typ || ev.Reason != want.reason || ev.Action != want.action || ev.Note != want.note {
			t.Errorf("event %d = %s %s %s %q, want %+v", i, ev.Type, ev.Reason, ev.Action, ev.Note, want)
		}
		if ev.ReportingController != "nodegc" || ev.ReportingInstance != "nodegc-node-a" || ev.Namespace != "default" ||
			ev.Name != fmt.Sprintf("node-a.%x", 0x18998b01859ed540+i) || ev.EventTime.IsZero() {
			t.Errorf("event %d: controller %q instance %q namespace %q name %q time %v", i, ev.ReportingController, ev.ReportingInstance, ev.Namespace, ev.Name, ev.EventTime)
		}
		if ref := ev.Regarding; ref.Kind != "Node" || ref.Name != "node-a" || ref.UID != "node-a" || ref.Namespace != "" {
			t.Errorf("event %d regards %+v, want the kubelet's reference to Node node-a", i, ref)
		}
	}
}

func TestRecorderAPIServerRefuses(t *testing.T) {
	api := &apiServer{status: http.StatusForbidden}
	r, logs := api.start(t)
	r.Report(failingPass)
	r.Report(failingPass)
	r.Stop(context.Background())
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "events.events.k8s.io is forbidden") {
		t.Errorf("%d warnings, want one naming the API server's refusal:\n%s", n, logs)
	}
}

func TestNoAPIServerNoEvents(t *testing.T) {
	r := Start(Options{NodeName: "node-a"})
	if r != nil {
		t.Fatal("a recorder without a client")
	}
	r.Report(failingPass) // a nil recorder does nothing
	r.Stop(context.Background())
}

func TestStopDoesNotWaitForAHungAPIServer(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	t.Cleanup(func() { close(hang); srv.Close() })
	kc, err := kubeclient.New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	r := Start(Options{Client: kc, NodeName: "node-a"})
	for range 3 * queueSize {
		r.Report(failingPass) // never blocks: the queue drops what does not fit
	}
	// The API server never answers while this runs, so a Stop that
	// waited for its requests instead of its context would never return.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	proctest.Done(t, "Stop with its context ended and the API server hung", func() { r.Stop(ctx) })
}
