package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

func TestReportSummaryCountsWhatAPassDidNotReach(t *testing.T) {
	items := func(outcomes ...engine.Outcome) []engine.ItemResult {
		var out []engine.ItemResult
		for i, o := range outcomes {
			out = append(out, engine.ItemResult{Kind: engine.ItemContainer, ID: strings.Repeat("a", i+1), Outcome: o})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		r    engine.PassReport
		want string
	}{
		{"a stopped pass counts the items it did not reach as not run",
			engine.PassReport{ID: 3, Kind: engine.PassContainers, Stopped: "stopped on request", Items: items(engine.OutcomeRemoved, engine.OutcomeNotRun, engine.OutcomeNotRun)},
			"Pass 3 (containers): 1 removed, 0 already gone, 0 skipped, 0 failed, 2 not run\n"},
		{"a dry run counts its items as planned",
			engine.PassReport{ID: 4, Kind: engine.PassContainers, DryRun: true, Items: items(engine.OutcomePlanned, engine.OutcomePlanned)},
			"Dry run 4 (containers): 0 removed, 0 already gone, 0 skipped, 0 failed, 2 planned\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			renderReport(&b, tc.r)
			if first, _, _ := strings.Cut(b.String(), "\n"); first+"\n" != tc.want {
				t.Errorf("first line %q, want %q", first, tc.want)
			}
		})
	}
}
