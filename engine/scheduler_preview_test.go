package engine

import (
	"context"
	"testing"
)

// TestPreviewPublishesNoEvents: issue 9 found a dry-run's
// FreeDiskSpaceFailed in the dashboard's Events pane, as if a pass had
// failed. A preview's report still carries the events its plan predicts,
// but subscribers get events only from real passes.
func TestPreviewPublishesNoEvents(t *testing.T) {
	rt := newFakeRuntime()
	rt.Fs = FsStats{Mountpoint: "/fake", CapacityBytes: 1000, AvailableBytes: 10} // 99% used, nothing to remove
	s, _ := startScheduler(t, rt, true)
	ch, stop := s.Subscribe()
	defer stop()
	ctx := context.Background()
	count := func() (reports, events int) {
		for len(ch) > 0 {
			n := <-ch
			if n.Report != nil {
				reports++
			}
			if n.Event != nil {
				events++
			}
		}
		return reports, events
	}

	r, err := s.Preview(ctx, PassImages)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the preview's report predicts FreeDiskSpaceFailed", func(t *testing.T) {
		if !r.DryRun || !hasEvent(r.Events, EventFreeDiskSpaceFailed) {
			t.Errorf("dry run %v, events %+v: want a dry run predicting FreeDiskSpaceFailed", r.DryRun, r.Events)
		}
	})
	t.Run("the preview publishes its report and no event", func(t *testing.T) {
		if reports, events := count(); reports != 1 || events != 0 {
			t.Errorf("subscriber saw %d reports and %d events, want 1 and 0", reports, events)
		}
	})
	t.Run("a real pass publishes its FreeDiskSpaceFailed", func(t *testing.T) {
		if _, err := s.Force(ctx, PassImages); err != nil {
			t.Fatal(err)
		}
		if reports, events := count(); reports != 1 || events != 1 {
			t.Errorf("subscriber saw %d reports and %d events, want 1 and 1", reports, events)
		}
	})
}
