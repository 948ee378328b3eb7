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
