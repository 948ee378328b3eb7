package agent

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/metrics"
	"github.com/nodegc/nodegc/nodeevents"
)

// followNotices feeds the scheduler's notices to the collector and the
// Node's events and the NodeGC object's writer (nil: none), and logs each
// pass and event, until the channel closes.
// afterPass, when set, runs after each real pass is recorded: the agent
// returns the pass's garbage to the system there, so that its memory
// between passes is what it keeps, not what the pass's listings of a
// large node took.
func followNotices(log *slog.Logger, col *metrics.Collector, events *nodeevents.Recorder, obj *objectWriter, notices <-chan engine.Notice, afterPass func()) {
	for n := range notices {
		col.ObserveStatus(n.Status)
		switch {
		case n.Report != nil && !n.Report.DryRun:
			col.ObserveReport(*n.Report)
			obj.observe(*n.Report)
			events.Report(*n.Report)
			logReport(log, *n.Report)
			if afterPass != nil {
				afterPass()
			}
		case n.Report != nil && n.Report.Shadow:
			col.ObserveReport(*n.Report)
			logShadow(log, col, *n.Report)
			if afterPass != nil {
				afterPass()
			}
		case n.Event != nil:
			level := slog.LevelInfo
			if n.Event.Warning {
				level = slog.LevelWarn
			}
			log.Log(context.Background(), level, "event", "reason", n.Event.Reason, "message", n.Event.Message)
		}
	}
}

// logReport logs what the engine's own "pass done" line leaves out: a
// pass that failed, and the notes of reconciliation.
func logReport(log *slog.Logger, r engine.PassReport) {
	for _, note := range r.Notes {
		log.Warn(note, "pass", r.PassID())
	}
	if r.Error != "" {
		log.Error("pass failed", "pass", r.PassID(), "kind", r.Kind, "err", r.Error)
	}
}

// logShadow logs a shadow pass: what it would have removed, and the
// comparison so far with what others removed.
func logShadow(log *slog.Logger, col *metrics.Collector, r engine.PassReport) {
	if r.Error != "" {
		log.Error("shadow pass failed", "kind", r.Kind, "err", r.Error)
		return
	}
	images, containers := r.CountKind(engine.ItemImage), r.CountKind(engine.ItemContainer)
	others, t := col.Shadow()
	total := t.Total()
	log.Info("shadow pass: removed nothing", "kind", r.Kind, "wouldRemoveImages", images, "wouldRemoveContainers", containers,
		"wouldHaveRemoved", total.WouldRemove(), "othersRemoved", total.OthersRemoved(), "agreed", total.Agreed,
		"nodegcOnly", total.NodegcOnly, "otherOnly", total.OtherOnly, "removedByOthersImages", others.Images, "removedByOthersContainers", others.Containers)
}

// startNodeEvents starts the recorder of the Node's events on the pod
// source's API client; nil (no events, no error) without one.
func startNodeEvents(ps *Pods, log *slog.Logger) *nodeevents.Recorder {
	if ps == nil || ps.Client == nil {
		return nil
	}
	return nodeevents.Start(nodeevents.Options{Client: ps.Client, NodeName: ps.Node, Log: log})
}

// LibraryWriter logs each line a library writes (klog, logrus) on log as
// one Info record, so that the agent's stderr holds only JSON lines.
func LibraryWriter(log *slog.Logger) io.Writer { return slogWriter{log} }

// slogWriter is LibraryWriter's writer.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		if line = strings.TrimSpace(line); line != "" {
			w.log.Info(line, "source", "library")
		}
	}
	return len(p), nil
}
