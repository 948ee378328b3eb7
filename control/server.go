package control

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// Scheduler is what the server asks of the agent's scheduler;
// *engine.Scheduler satisfies it.
type Scheduler interface {
	engine.Controller
	// Stop stops the pass in flight, reporting whether there was one.
	Stop() bool
}

// Engine is what the server reads of the agent's engine; *engine.Engine
// satisfies it.
type Engine interface {
	Snapshot(ctx context.Context) (engine.Snapshot, error)
	PlanAt(ctx context.Context, kind engine.PassKind, at time.Time) (engine.Snapshot, engine.Plan, error)
	// RemeasureImageFs is the attached dashboard's usage reading: a
	// statfs of the mountpoint the runtime named last.
	RemeasureImageFs(ctx context.Context) (engine.FsStats, error)
	ContainersChanged(ctx context.Context, since uint64) (bool, error)
	EffectivePolicy(now time.Time) engine.Policy
	Policy() engine.Policy
	// MaxApplyBytes bounds an apply request's body: the largest plan
	// the engine issued and still remembers could take.
	MaxApplyBytes() int64
}

// Options configure a Server.
type Options struct {
	Scheduler Scheduler
	Engine    Engine
	PID       int
	StartedAt time.Time
	Version   string
	// ReadOnly refuses every command on every connection (a viewer's
	// listener).
	ReadOnly bool
	// Context bounds the passes the server's clients start: the agent's
	// own, which ends when it stops. nil is context.Background.
	Context context.Context
	// Log gets a line for every command the server runs, naming who sent
	// it: the socket peer's uid and pid. nil discards.
	Log *slog.Logger
	// Journal reads the agent's deletion journal (engine.ReadJournalLines
	// over its state dir) for GET /v1/journal; nil serves an empty one.
	Journal func(ctx context.Context) ([]engine.JournalEntry, error)
}

// keptReports is how many of the latest real pass reports GET
// /v1/reports returns.
const keptReports = 16

// Server serves the control protocol.
type Server struct {
	o       Options
	mu      sync.Mutex
	reports []engine.PassReport
	stop    func()
}

// NewServer returns a server; it keeps the latest pass reports from now
// on. Close stops that.
func NewServer(o Options) *Server {
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o}
	notices, unsubscribe := o.Scheduler.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := range notices {
			if n.Report != nil && !n.Report.DryRun {
				s.mu.Lock()
				s.reports = append(s.reports, keptReport(*n.Report))
				if len(s.reports) > keptReports {
					s.reports = s.reports[len(s.reports)-keptReports:]
				}
				s.mu.Unlock()
			}
		}
	}()
	s.stop = func() { unsubscribe(); <-done }
	return s
}

// keptReport is r as GET /v1/reports keeps it: its plan without the
// lists of every object planned (images kept and removed and their order,
// containers, sandboxes and logs to remove), since its items say what the
// pass did to each; the plan's figures, the items, events and notes stay.
// The agent keeps 16 reports for as long as 16 passes take (a quarter of
// an hour), and a large node's first container pass alone plans 4,050
// removals: kept whole, its plan was about a third of the agent's heap.
// The latest report is still whole in the status (engine.Status.LastReport)
// until the next pass, and a pass's whole report goes to every client
// following the notices as it ends.
func keptReport(r engine.PassReport) engine.PassReport {
	p := &r.Plan
	p.ImageGC.Remove, p.ImageGC.Keep, p.ImageGC.Order = nil, nil, nil
	p.ContainerGC.Remove, p.SandboxGC.Remove, p.LogGC.Remove = nil, nil, nil
	return r
}

// Close stops keeping reports.
func (s *Server) Close() { s.stop() }

// connState is what the server knows of one connection.
type connState struct {
	// readOnly is set by the first request that says so, for good.
	readOnly atomic.Bool
	// refused is why the peer may not use the socket; "" when it may.
	refused string
	// uid and pid are the socket peer's, read as it connected.
	uid, pid int
}

type connKey struct{}

// Handler returns the protocol's handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.status)
	mux.HandleFunc("GET /v1/snapshot", s.snapshot)
	mux.HandleFunc("GET /v1/plan", s.plan)
	mux.HandleFunc("GET /v1/imagefs", s.imageFs)
	mux.HandleFunc("GET /v1/changed", s.changed)
	mux.HandleFunc("GET /v1/reports", s.listReports)
	mux.HandleFunc("GET /v1/journal", s.journal)
	mux.HandleFunc("GET /v1/notices", s.notices)
	mux.HandleFunc("POST /v1/force", s.command(s.force))
	mux.HandleFunc("POST /v1/preview", s.command(s.preview))
	mux.HandleFunc("POST /v1/apply", s.command(s.apply))
	mux.HandleFunc("POST /v1/pause", s.command(s.pause))
	mux.HandleFunc("POST /v1/resume", s.command(func(w http.ResponseWriter, r *http.Request) {
		_ = s.o.Scheduler.Resume(engine.WithActor(r.Context(), who(r)))
		writeJSON(w, http.StatusOK, s.o.Scheduler.Status())
	}))
	mux.HandleFunc("POST /v1/stop", s.command(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, StopReply{Stopped: s.o.Scheduler.Stop()})
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*connState); ok {
			if c.refused != "" {
				writeError(w, http.StatusForbidden, CodeNotRoot, c.refused)
				return
			}
			if r.Header.Get(ReadOnlyHeader) != "" {
				c.readOnly.Store(true)
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// readOnly reports whether the request's connection may send no command.
func (s *Server) readOnly(r *http.Request) bool {
	if s.o.ReadOnly || r.Header.Get(ReadOnlyHeader) != "" {
		return true
	}
	c, ok := r.Context().Value(connKey{}).(*connState)
	return ok && c.readOnly.Load()
}

// command refuses h to a read-only connection, and logs who sent the
// command before running it.
func (s *Server) command(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.readOnly(r) {
			writeError(w, http.StatusForbidden, CodeReadOnly, "this connection is read-only: it may send no command")
			return
		}
		s.o.Log.Info("control command", append([]any{"command", r.URL.Path}, sender(r)...)...)
		h(w, r)
	}
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st := s.o.Scheduler.Status()
	if r.URL.Query().Get("brief") == "true" {
		st.LastReport = nil // the notices stream's first line carries it
	}
	writeJSON(w, http.StatusOK, Status{
		PID: s.o.PID, StartedAt: s.o.StartedAt, Version: s.o.Version, Policy: s.o.Engine.Policy(),
		Scheduler: st, ReadOnly: s.readOnly(r),
	})
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	snap, err := s.o.Engine.Snapshot(r.Context())
	if err != nil {
		writeError(w, http.StatusBadGateway, CodeFailed, "snapshot: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, SnapshotReply{Snapshot: snap, Policy: s.o.Engine.EffectivePolicy(snap.TakenAt),
		Fingerprint: engine.ContainersFingerprint(snap.Containers)})
}

func (s *Server) plan(w http.ResponseWriter, r *http.Request) {
	kind := engine.PassKind(r.URL.Query().Get("kind"))
	if kind == "" {
		kind = engine.PassFull
	}
	var at time.Time
	if v := r.URL.Query().Get("at"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, http.StatusBadRequest, CodeBadRequest, "at: "+err.Error())
			return
		}
		at = t
	}
	snap, p, err := s.o.Engine.PlanAt(r.Context(), kind, at)
	if err != nil {
		writeError(w, http.StatusBadGateway, CodeFailed, "plan: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, PlanReply{Snapshot: snap, Plan: p})
}

func (s *Server) imageFs(w http.ResponseWriter, r *http.Request) {
	fs, err := s.o.Engine.RemeasureImageFs(r.Context())
	if err != nil {
		writeError(w, http.StatusBadGateway, CodeFailed, "image fs: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, fs)
}

func (s *Server) changed(w http.ResponseWriter, r *http.Request) {
	since, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "since: "+err.Error())
		return
	}
	ch, err := s.o.Engine.ContainersChanged(r.Context(), since)
	if err != nil {
		writeError(w, http.StatusBadGateway, CodeFailed, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ChangedReply{Changed: ch})
}

func (s *Server) journal(w http.ResponseWriter, r *http.Request) {
	var lines []engine.JournalEntry
	if s.o.Journal != nil {
		var err error
		if lines, err = s.o.Journal(r.Context()); err != nil {
			writeError(w, http.StatusBadGateway, CodeFailed, "journal: "+err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, append([]engine.JournalEntry{}, lines...))
}

// pause pauses the periodic passes in the sender's name. A held pause
// lasts while its request does: the reply's status is sent at once, and
// the request stays open until its client goes (a dashboard that quit,
// a connection that broke) or the agent stops; then the pause ends,
// unless another replaced it.
func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	var req PauseRequest
	if !readBody(w, r, &req, maxPassBody) {
		return
	}
	// Read the body to its end: only then does the server watch the
	// connection, and end the request's context when the client goes.
	_, _ = io.Copy(io.Discard, r.Body)
	ctx := engine.WithActor(r.Context(), who(r))
	if req.Held {
		held, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(s.o.Context, cancel)
		defer stop()
		ctx = held
	}
	_ = s.o.Scheduler.Pause(ctx, engine.Pause{Until: req.Until, Held: req.Held})
	writeJSON(w, http.StatusOK, s.o.Scheduler.Status())
	if req.Held {
		_ = http.NewResponseController(w).Flush()
		<-ctx.Done()
	}
}

func (s *Server) listReports(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := append([]engine.PassReport{}, s.reports...)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// notices streams the scheduler's notices, one JSON object a line, the
// current status first, until the client goes.
func (s *Server) notices(w http.ResponseWriter, r *http.Request) {
	ch, unsubscribe := s.o.Scheduler.Subscribe()
	defer unsubscribe()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	send := func(n Notice) bool {
		return enc.Encode(n) == nil && rc.Flush() == nil
	}
	if !send(Notice{Status: s.o.Scheduler.Status()}) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case n, ok := <-ch:
			// A stream whose client is gone or no longer authorized
			// sends nothing more, even when a notice came in as it ended.
			if !ok || r.Context().Err() != nil || !send(toWire(n)) {
				return
			}
		}
	}
}

// passContext is the context of a pass a client starts: it ends when the
// agent stops or the client goes (a gc interrupted, a dashboard that
// quit), which stops the pass after its items in flight.
func (s *Server) passContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.o.Context)
	stop := context.AfterFunc(r.Context(), cancel)
	return ctx, func() { stop(); cancel() }
}

// readPass decodes a PassRequest and checks its kind, or replies 400.
func readPass(w http.ResponseWriter, r *http.Request) (engine.PassKind, bool) {
	var req PassRequest
	if !readBody(w, r, &req, maxPassBody) {
		return "", false
	}
	switch req.Kind {
	case engine.PassImages, engine.PassContainers, engine.PassFull, engine.PassReclaimAll:
		return req.Kind, true
	}
	writeError(w, http.StatusBadRequest, CodeBadRequest, "kind: must be images, containers, full or reclaim-all, got "+strconv.Quote(string(req.Kind)))
	return "", false
}

func (s *Server) force(w http.ResponseWriter, r *http.Request) {
	kind, ok := readPass(w, r)
	if !ok {
		return
	}
	ctx, cancel := s.passContext(r)
	defer cancel()
	rep, err := s.o.Scheduler.Force(ctx, kind)
	writePass(w, rep, err)
}

func (s *Server) preview(w http.ResponseWriter, r *http.Request) {
	kind, ok := readPass(w, r)
	if !ok {
		return
	}
	rep, err := s.o.Scheduler.Preview(r.Context(), kind)
	writePass(w, rep, err)
}

func (s *Server) apply(w http.ResponseWriter, r *http.Request) {
	limit := int64(maxBody)
	if s.o.Engine != nil {
		limit = s.o.Engine.MaxApplyBytes()
	}
	var req ApplyRequest
	if !readBody(w, r, &req, limit) {
		return
	}
	ctx, cancel := s.passContext(r)
	defer cancel()
	rep, err := s.o.Scheduler.Apply(ctx, req.Plan)
	writePass(w, rep, err)
}

// maxBody bounds an apply request's body when the server has no engine
// to size it by; maxPassBody bounds a request that names a pass kind.
const (
	maxBody     = 64 << 20
	maxPassBody = 4 << 10
)

// readBody decodes the request's JSON body, at most limit bytes, into v,
// or replies 400; a body that says or turns out to be larger is refused
// with 413 before it is read whole.
func readBody(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	tooLarge := func() bool {
		writeError(w, http.StatusRequestEntityTooLarge, CodeBadRequest,
			"body: larger than the "+strconv.FormatInt(limit, 10)+" bytes this agent takes for "+r.URL.Path)
		return false
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(v)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return tooLarge()
	case err != nil:
		writeError(w, http.StatusBadRequest, CodeBadRequest, "body: "+err.Error())
		return false
	}
	return true
}

// writePass replies with a pass's report: 200 with the pass's error in
// the body, except errors that mean no pass ran.
func writePass(w http.ResponseWriter, rep engine.PassReport, err error) {
	switch {
	case errors.Is(err, engine.ErrReadOnly):
		writeError(w, http.StatusForbidden, CodeReadOnly, err.Error())
	case errors.Is(err, engine.ErrStalePlan), errors.Is(err, engine.ErrUnknownPlan):
		writeError(w, http.StatusConflict, CodeStalePlan, err.Error())
	case err != nil && rep.StartedAt.IsZero():
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
	case err != nil:
		writeJSON(w, http.StatusOK, PassReply{Report: rep, Error: err.Error()})
	default:
		writeJSON(w, http.StatusOK, PassReply{Report: rep})
	}
}

func writeError(w http.ResponseWriter, code int, c, msg string) {
	writeJSON(w, code, Error{Error: msg, Code: c})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
