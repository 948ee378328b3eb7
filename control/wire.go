package control

import (
	"time"

	"github.com/nodegc/nodegc/engine"
)

// Status is GET /v1/status: who the agent is and what its scheduler does.
type Status struct {
	PID       int           `json:"pid"`
	StartedAt time.Time     `json:"startedAt"`
	Version   string        `json:"version"`
	Policy    engine.Policy `json:"policy"`
	// Scheduler is the scheduler's state; its LastReport is the latest
	// real pass, whoever started it.
	Scheduler engine.Status `json:"scheduler"`
	// ReadOnly says this connection may send no command.
	ReadOnly bool `json:"readOnly"`
}

// SnapshotReply is GET /v1/snapshot.
type SnapshotReply struct {
	Snapshot engine.Snapshot `json:"snapshot"`
	// Policy is the engine's effective policy at the snapshot's time, the
	// one its passes plan with: a client plans the snapshot with it.
	Policy engine.Policy `json:"policy"`
	// Fingerprint is the agent's engine.ContainersFingerprint of the
	// snapshot's containers, the since of GET /v1/changed (fingerprints
	// compare within one process only).
	Fingerprint uint64 `json:"fingerprint,string"`
}

// PlanReply is GET /v1/plan: the snapshot and the engine's plan of it.
type PlanReply struct {
	Snapshot engine.Snapshot `json:"snapshot"`
	Plan     engine.Plan     `json:"plan"`
}

// ChangedReply is GET /v1/changed.
type ChangedReply struct {
	Changed bool `json:"changed"`
}

// PassRequest is the body of POST /v1/force and /v1/preview.
type PassRequest struct {
	Kind engine.PassKind `json:"kind"`
}

// PauseRequest is the body of POST /v1/pause: engine.Pause on the wire.
// A held pause's reply is its status, and the request stays open for as
// long as the pause is to last.
type PauseRequest struct {
	Until time.Time `json:"until,omitzero"`
	Held  bool      `json:"held,omitempty"`
}

// ApplyRequest is the body of POST /v1/apply.
type ApplyRequest struct {
	Plan engine.Plan `json:"plan"`
}

// PassReply is what a pass command returns: its report, and the error
// the pass ended with ("" when none; a failed item is in the report).
type PassReply struct {
	Report engine.PassReport `json:"report"`
	Error  string            `json:"error,omitempty"`
}

// StopReply is POST /v1/stop.
type StopReply struct {
	// Stopped says a pass was in flight and was told to stop.
	Stopped bool `json:"stopped"`
}

// Notice is one line of GET /v1/notices: engine.Notice on the wire. The
// stream's first line carries the status alone.
type Notice struct {
	Report   *engine.PassReport `json:"report,omitempty"`
	Event    *engine.Event      `json:"event,omitempty"`
	Progress *engine.Progress   `json:"progress,omitempty"`
	// Containers is engine.Notice.Containers.
	Containers bool          `json:"containers,omitempty"`
	Status     engine.Status `json:"status"`
}

// Error is the body of every reply that is not 200.
type Error struct {
	Error string `json:"error"`
	// Code is one of the Code* constants.
	Code string `json:"code"`
}

// Error codes.
const (
	CodeReadOnly   = "read-only"
	CodeNotRoot    = "not-root"
	CodeBadRequest = "bad-request"
	CodeStalePlan  = "stale-plan"
	CodeFailed     = "failed"
)

// ReadOnlyHeader is the request header by which a client makes its
// connection read-only for good.
const ReadOnlyHeader = "Nodegc-Read-Only"

func toWire(n engine.Notice) Notice {
	return Notice{Report: n.Report, Event: n.Event, Progress: n.Progress, Containers: n.Containers, Status: n.Status}
}

func fromWire(n Notice) engine.Notice {
	return engine.Notice{Report: n.Report, Event: n.Event, Progress: n.Progress, Containers: n.Containers, Status: n.Status}
}
