package engine

import (
	"io"

	"github.com/nodegc/nodegc/engine/wire"
)

// DecodeSnapshot reads a NodeSnapshot document (wire.DecodeSnapshot); a
// document that breaks the contract gives a *SnapshotError naming the
// field.
func DecodeSnapshot(data []byte) (Snapshot, error) {
	return wire.DecodeSnapshot(data)
}

// WritePlanJSON writes the plan p with its explanation x to w as one JSON
// object and a newline (wire.WritePlanJSON).
func WritePlanJSON(w io.Writer, p Plan, x Explanation) error {
	return wire.WritePlanJSON(w, p, x)
}

// WriteExplainedPlanJSON is WritePlanJSON of p and Explain(s, p), the
// explanation made while the plan's own fields are marshalled and
// written.
func WriteExplainedPlanJSON(w io.Writer, s Snapshot, p Plan) error {
	xc := make(chan Explanation, 1)
	go func() { xc <- Explain(s, p) }()
	return wire.WritePlanJSONWith(w, p, func() Explanation { return <-xc })
}

// WritePlanJSONWith is WritePlanJSON with the explanation that explain
// returns, called once the plan's own fields are handed to the encoders
// (wire.WritePlanJSONWith): with PlanExplained's explain, the plan is
// written while its explanation is made.
func WritePlanJSONWith(w io.Writer, p Plan, explain func() Explanation) error {
	return wire.WritePlanJSONWith(w, p, explain)
}
