package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/internal/texttable"
)

// renderReport prints what a pass did, item outcomes and bytes freed.
func renderReport(w io.Writer, r engine.PassReport) {
	var b bytes.Buffer
	title := "Pass"
	if r.DryRun {
		title = "Dry run"
	}
	// A dry run's items are planned; a pass's never are, but those a
	// stopped pass did not reach are not run.
	last, n := "planned", r.Count(engine.OutcomePlanned)
	if !r.DryRun {
		last, n = "not run", r.Count(engine.OutcomeNotRun)
	}
	fmt.Fprintf(&b, "%s %d (%s): %d removed, %d already gone, %d skipped, %d failed, %d %s\n",
		title, r.ID, r.Kind, r.Count(engine.OutcomeRemoved), r.Count(engine.OutcomeGone),
		r.Count(engine.OutcomeSkipped), r.Count(engine.OutcomeFailed), n, last)
	if !r.DryRun {
		measured := "not measured"
		if r.MeasuredBytesFreed != nil {
			measured = format.Bytes(*r.MeasuredBytesFreed)
		}
		fmt.Fprintf(&b, "Image bytes freed: %s estimated (runtime sizes), %s measured on the image fs\n",
			format.Bytes(r.EstimatedBytesFreed), measured)
	}
	for _, it := range r.Items {
		switch it.Outcome {
		case engine.OutcomeFailed:
			fmt.Fprintf(&b, "  failed  %s %s: %s\n", it.Kind, format.ShortID(it.ID), it.Error)
		case engine.OutcomeSkipped:
			fmt.Fprintf(&b, "  skipped %s %s: %s\n", it.Kind, format.ShortID(it.ID), it.Detail)
		}
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", r.Error)
	}
	w.Write(texttable.Printable(b.Bytes()))
}
