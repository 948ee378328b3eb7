package wire

import (
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// jsonTime is a time.Time that encoding/json writes through MarshalText:
// the same bytes as time.Time's MarshalJSON (RFC 3339 with nanoseconds,
// quoted; nothing in it needs escaping), without the check encoding/json
// makes of whatever a MarshalJSON returns, which for a big plan's 240,000
// times cost more than making them. A time that MarshalJSON cannot write
// (a year outside [0,9999], a zone offset of 24 hours or more) fails here
// too; writeListAs then encodes the piece again as the model's rows, so
// the error is time.Time's own. TestJSONTimeIsTimeMarshalJSON pins it.
type jsonTime time.Time

// IsZero is time.Time's, for omitzero.
func (t jsonTime) IsZero() bool { return time.Time(t).IsZero() }

// MarshalText is time.Time's.
func (t jsonTime) MarshalText() ([]byte, error) { return time.Time(t).MarshalText() }

// containerRow is model.ContainerRow with its times as jsonTime: the
// same fields, in the same order, with the same tags
// (TestContainerRowIsModelContainerRow).
type containerRow struct {
	Pod        string               `json:"pod"`
	Rank       int                  `json:"rank"`
	ID         string               `json:"id"`
	Name       string               `json:"name"`
	Attempt    uint32               `json:"attempt"`
	State      model.ContainerState `json:"state"`
	CreatedAt  jsonTime             `json:"createdAt,omitzero"`
	FinishedAt *jsonTime            `json:"finishedAt,omitempty"`
	Action     model.Action         `json:"action"`
	Step       int                  `json:"step,omitempty"`
	Reason     string               `json:"reason,omitempty"`
	Detail     string               `json:"detail,omitempty"`
}

// containerRowOf is r as a containerRow.
func containerRowOf(r *model.ContainerRow) containerRow {
	return containerRow{Pod: r.Pod, Rank: r.Rank, ID: r.ID, Name: r.Name, Attempt: r.Attempt, State: r.State,
		CreatedAt: jsonTime(r.CreatedAt), FinishedAt: (*jsonTime)(r.FinishedAt), Action: r.Action, Step: r.Step,
		Reason: r.Reason, Detail: r.Detail}
}
