package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/texttable"
)

// Bounds of the agent's replies. Whatever the process serving the socket
// answers is read no further than the bound of its kind, so a
// reply that never ends costs the client that bound, not its memory; one
// past it is a *TooLargeError naming the request. The large ones derive
// from LargeNodeSnapshot.
const (
	// LargeNodeSnapshot is the JSON snapshot of the largest node nodegc
	// is measured on: 78 MB for `nodegc snapshot` of a simulated node of
	// 10,001 images, 120,000 containers and 20,000 sandboxes
	// (docs/performance.md), far beyond the kubelet's limit of 110 pods a node.
	LargeNodeSnapshot = 78 << 20
	// MaxSnapshotReply bounds GET /v1/snapshot: a snapshot and a policy.
	MaxSnapshotReply = 2 * LargeNodeSnapshot
	// MaxPlanReply bounds GET /v1/plan: a snapshot and its plan (that
	// node's full plan is about half its snapshot).
	MaxPlanReply = 3 * LargeNodeSnapshot
	// MaxReportReply bounds one pass report: a pass reply, the status
	// with its last report, GET /v1/reports (16 reports, each without
	// its plan's lists) and each line of the notices stream (a notice
	// carries at most one report). A report is a plan and one item per
	// removal.
	MaxReportReply = 2 * LargeNodeSnapshot
	// MaxJournalReply bounds GET /v1/journal: the journal's kept
	// segments, each line a removal's intent or outcome (a few hundred
	// bytes).
	MaxJournalReply = 2 * LargeNodeSnapshot
	// MaxBriefReply bounds the brief status (a policy and the
	// scheduler's state, no report: a few KB).
	MaxBriefReply = 1 << 20
	// MaxSmallReply bounds the replies of a few fields (the image
	// filesystem, changed, pause, resume, stop) and every error reply.
	MaxSmallReply = 64 << 10
)

// TooLargeError is a reply longer than its bound.
type TooLargeError struct {
	// What names the request ("GET /v1/status?brief=true").
	What  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the reply to %s is larger than its bound of %d bytes: refused", e.What, e.Limit)
}

// LimitReply returns r read no further than limit bytes: a read past
// them fails with a *TooLargeError naming what.
func LimitReply(r io.Reader, what string, limit int64) io.Reader {
	return &limitedReply{r: r, what: what, left: limit, limit: limit}
}

type limitedReply struct {
	r           io.Reader
	what        string
	left, limit int64
}

func (l *limitedReply) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, &TooLargeError{What: l.what, Limit: l.limit}
	}
	// Read one byte more than is left, to tell a reply of exactly the
	// bound from a longer one.
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n + int(l.left), &TooLargeError{What: l.what, Limit: l.limit}
	}
	return n, err
}

// Client talks to an agent's control socket. It is the agent's
// engine.Controller
// (controller.go): its commands are the protocol's, its status and
// notices those the agent sends (Watch).
type Client struct {
	hc       *http.Client
	readOnly bool

	mu sync.Mutex
	f  follow
}

// ErrServerNotRoot is a control socket served by a process that is not
// root: not an agent of this node's.
var ErrServerNotRoot = errors.New("the process serving it is not root")

// NewClient returns a client of the socket at path. A read-only client
// marks its connections read-only, so the agent refuses them any command
// whatever they send.
func NewClient(path string, readOnly bool) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				return nil, err
			}
			if uid, err := peerUID(c); err != nil || uid != 0 {
				c.Close()
				return nil, fmt.Errorf("%s: %w", path, ErrServerNotRoot)
			}
			return c, nil
		},
		MaxIdleConns:    4,
		IdleConnTimeout: time.Minute,
	}
	return &Client{hc: &http.Client{Transport: tr}, readOnly: readOnly}
}

// ReadOnly reports whether the client sends no command.
func (c *Client) ReadOnly() bool { return c.readOnly }

// Close drops the client's idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// RemoteError is an error reply of the agent.
type RemoteError struct {
	Status int
	Reply  Error
}

func (e *RemoteError) Error() string { return "agent: " + e.Reply.Error }

// Is makes the agent's stale-plan reply an engine.ErrStalePlan, as the
// engine's own refusal is, so that a dashboard attached to an agent tells
// it apart from a failed pass.
func (e *RemoteError) Is(target error) bool {
	return target == engine.ErrStalePlan && e.Reply.Code == CodeStalePlan
}

// do sends a request and decodes a 200 reply of at most limit bytes into
// out, every string in it made printable (Printable).
func (c *Client) do(ctx context.Context, method, path string, limit int64, in, out any) error {
	var body io.Reader
	if in != nil {
		body = jsonBody(in)
	}
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(LimitReply(resp.Body, method+" "+path, limit)).Decode(out); err != nil {
		return err
	}
	Printable(out)
	return nil
}

// jsonBody is v as a request body. The protocol's requests are plain
// structs, which always marshal.
func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

// Printable rewrites, in place, every string v points to (struct fields,
// slices, maps and their keys, through pointers) with texttable's
// PrintableLine: what an agent sends is shown on the operator's terminal
// (image tags, pod and container names, event messages, errors), and a
// control character in it is written as a visible \xNN, never obeyed.
// Strings with none are left as they are. A remote plan's IDs that had
// to be escaped no longer name anything on the node, so applying it
// removes nothing of theirs.
func Printable(v any) { printable(reflect.ValueOf(v)) }

// printable makes the strings of v printable in place where v can be
// set, and reports whether any string under v needed it (so a map entry
// or an interface's value is written back only then).
func printable(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		p := texttable.PrintableLine(s)
		if p == s {
			return false
		}
		if v.CanSet() {
			v.SetString(p)
		}
		return true
	case reflect.Pointer:
		return !v.IsNil() && printable(v.Elem())
	case reflect.Interface:
		if v.IsNil() || !v.CanSet() {
			return false
		}
		e := reflect.New(v.Elem().Type()).Elem()
		e.Set(v.Elem())
		if !printable(e) {
			return false
		}
		v.Set(e)
		return true
	case reflect.Struct:
		changed := false
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() && printable(v.Field(i)) {
				changed = true
			}
		}
		return changed
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false // bytes, not text
		}
		changed := false
		for i := range v.Len() {
			if printable(v.Index(i)) {
				changed = true
			}
		}
		return changed
	case reflect.Map:
		return printableMap(v)
	}
	return false
}

// printableMap makes a map's keys and values printable, rewriting only
// the entries that needed it.
func printableMap(v reflect.Value) bool {
	if v.IsNil() {
		return false
	}
	t := v.Type()
	type entry struct{ old, k, e reflect.Value }
	var changed []entry
	for iter := v.MapRange(); iter.Next(); {
		k := reflect.New(t.Key()).Elem()
		k.Set(iter.Key())
		e := reflect.New(t.Elem()).Elem()
		e.Set(iter.Value())
		kc, ec := printable(k), printable(e)
		if kc || ec {
			changed = append(changed, entry{iter.Key(), k, e})
		}
	}
	for _, c := range changed {
		v.SetMapIndex(c.old, reflect.Value{})
	}
	for _, c := range changed {
		v.SetMapIndex(c.k, c.e)
	}
	return len(changed) > 0
}

// send sends a request and returns a 200 reply; any other is a
// *RemoteError.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, body)
	if err != nil {
		return nil, err
	}
	if c.readOnly {
		req.Header.Set(ReadOnlyHeader, "true")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		re := &RemoteError{Status: resp.StatusCode}
		if json.NewDecoder(LimitReply(resp.Body, method+" "+path, MaxSmallReply)).Decode(&re.Reply) != nil || re.Reply.Error == "" {
			re.Reply.Error = resp.Status
		}
		Printable(&re.Reply)
		return nil, re
	}
	return resp, nil
}

// AgentStatus is GET /v1/status: who the agent is, its policy and its
// scheduler's state with the last pass report.
func (c *Client) AgentStatus(ctx context.Context) (Status, error) {
	var s Status
	return s, c.do(ctx, http.MethodGet, "/v1/status", MaxReportReply, nil, &s)
}

// StatusBrief is GET /v1/status?brief=true: the status without the last
// pass report (Scheduler.LastReport is nil). That report holds every item
// of the pass and its plan: about 2.5 MB of JSON after a 1,000-pod node's
// first container pass, 0.1 to 1 s to send and read before a dashboard
// could draw. A dashboard opens on the brief status (Probe) and gets the
// report from the notices stream's first line (Watch).
func (c *Client) StatusBrief(ctx context.Context) (Status, error) {
	var s Status
	return s, c.do(ctx, http.MethodGet, "/v1/status?brief=true", MaxBriefReply, nil, &s)
}

// Snapshot is GET /v1/snapshot.
func (c *Client) Snapshot(ctx context.Context) (SnapshotReply, error) {
	var s SnapshotReply
	return s, c.do(ctx, http.MethodGet, "/v1/snapshot", MaxSnapshotReply, nil, &s)
}

// Plan is GET /v1/plan: the agent snapshots the node and plans a pass of
// the kind at at (zero: the snapshot's time) with its records and its
// effective policy, as its next pass would.
func (c *Client) Plan(ctx context.Context, kind engine.PassKind, at time.Time) (PlanReply, error) {
	q := url.Values{"kind": {string(kind)}}
	if !at.IsZero() {
		q.Set("at", at.Format(time.RFC3339Nano))
	}
	var p PlanReply
	return p, c.do(ctx, http.MethodGet, "/v1/plan?"+q.Encode(), MaxPlanReply, nil, &p)
}

// ImageFs is GET /v1/imagefs.
func (c *Client) ImageFs(ctx context.Context) (engine.FsStats, error) {
	var fs engine.FsStats
	return fs, c.do(ctx, http.MethodGet, "/v1/imagefs", MaxSmallReply, nil, &fs)
}

// Reports is GET /v1/reports: the agent's latest pass reports, oldest
// first, whoever started the passes.
func (c *Client) Reports(ctx context.Context) ([]engine.PassReport, error) {
	var r []engine.PassReport
	return r, c.do(ctx, http.MethodGet, "/v1/reports", MaxReportReply, nil, &r)
}

// Journal is GET /v1/journal: the intent and outcome lines of the
// agent's deletion journal, oldest first, as engine.ReadJournalLines
// reads them.
func (c *Client) Journal(ctx context.Context) ([]engine.JournalEntry, error) {
	var r []engine.JournalEntry
	return r, c.do(ctx, http.MethodGet, "/v1/journal", MaxJournalReply, nil, &r)
}

// pass sends a pass command and returns its report and the pass's error.
func (c *Client) pass(ctx context.Context, path string, in any) (engine.PassReport, error) {
	var r PassReply
	if err := c.do(ctx, http.MethodPost, path, MaxReportReply, in, &r); err != nil {
		return engine.PassReport{}, err
	}
	if r.Error != "" {
		return r.Report, errors.New(r.Error)
	}
	return r.Report, nil
}

// Force asks the agent to run a pass of the kind now. Cancelling ctx
// drops the connection, which stops the pass after its items in flight.
func (c *Client) Force(ctx context.Context, kind engine.PassKind) (engine.PassReport, error) {
	return c.pass(ctx, "/v1/force", PassRequest{Kind: kind})
}

// Preview asks the agent for a dry run of the kind.
func (c *Client) Preview(ctx context.Context, kind engine.PassKind) (engine.PassReport, error) {
	return c.pass(ctx, "/v1/preview", PassRequest{Kind: kind})
}

// Apply asks the agent to apply exactly p; it re-checks every item.
func (c *Client) Apply(ctx context.Context, p engine.Plan) (engine.PassReport, error) {
	return c.pass(ctx, "/v1/apply", ApplyRequest{Plan: p})
}

// Stop stops the agent's pass in flight; it reports whether one was.
func (c *Client) Stop(ctx context.Context) (bool, error) {
	var r StopReply
	return r.Stopped, c.do(ctx, http.MethodPost, "/v1/stop", MaxSmallReply, struct{}{}, &r)
}

// Notices opens GET /v1/notices. The channel closes when ctx ends or the
// stream breaks; its first notice carries the status alone.
func (c *Client) Notices(ctx context.Context) (<-chan engine.Notice, error) {
	resp, err := c.send(ctx, http.MethodGet, "/v1/notices", nil)
	if err != nil {
		return nil, err
	}
	ch := make(chan engine.Notice, 64)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		// Each line is one notice, at most one report: a longer line
		// ends the stream (bufio.ErrTooLong) before it is read whole.
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), MaxReportReply)
		for sc.Scan() {
			var n Notice
			if json.Unmarshal(sc.Bytes(), &n) != nil {
				return
			}
			Printable(&n)
			select {
			case ch <- fromWire(n):
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
