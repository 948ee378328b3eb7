package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// reconcileSettle and reconcilePoll bound Engine.settle: how long, and
// how often, reconciliation asks again about an item a recent intent of an
// earlier run names before it journals it not-removed. A killed nodegc's
// RemoveImage has been seen to delete the image in containerd after the
// CRI cache, which ImageStatus reads, was asked.
var (
	reconcileSettle = 2 * time.Second
	reconcilePoll   = 50 * time.Millisecond
)

// reconcileLocked settles the intents of an earlier, interrupted pass that
// have no outcome: it asks the runtime (or the filesystem, for logs)
// whether each item still exists and journals what happened, so that every
// item the runtime no longer has is in the journal. An item it cannot ask
// about stays open for the next try. A deleting engine runs it before its
// first snapshot, and again after a pass whose journal write failed. It
// returns notes for the next report; e.mu is held.
func (e *Engine) reconcileLocked(ctx context.Context) []string {
	if e.journal == nil || e.o.Remover == nil || e.reconciled {
		return nil
	}
	lines, err := ReadJournalLines(e.o.StateDir)
	if err != nil {
		return []string{fmt.Sprintf("journal not reconciled: %v", err)}
	}
	open := OpenIntents(lines)
	if len(open) == 0 {
		e.reconciled = true
		return nil
	}
	var removed, kept, unknown int
	exists := make([]bool, len(open))
	errs := make([]error, len(open))
	for i, in := range open {
		exists[i], errs[i] = e.exists(ctx, in)
	}
	e.settle(ctx, open, exists, errs)
	for i, in := range open {
		if errs[i] != nil {
			unknown++
			e.log.Warn("reconcile journal intent", "kind", in.Kind, "id", in.ID, "err", errs[i])
			continue
		}
		out := in
		out.Time, out.Reconciled, out.Op = e.now(), true, JournalRemoved
		if exists[i] {
			out.Op = JournalNotRemoved
			kept++
		} else {
			removed++
		}
		if err := e.journal.write(out); err != nil {
			return []string{fmt.Sprintf("journal not reconciled: %v", err)}
		}
	}
	e.reconciled = unknown == 0
	note := fmt.Sprintf("journal: reconciled %d intents an interrupted pass left without outcome: %d removed, %d still there", removed+kept, removed, kept)
	if unknown > 0 {
		note += fmt.Sprintf(", %d could not be checked (left for the next try)", unknown)
	}
	e.log.Warn(note)
	return []string{note}
}

// settle asks again, in rounds every reconcilePoll for up to
// reconcileSettle, about the items the runtime still shows whose intent is
// recent (younger than CallTimeout) and was written by an earlier run of
// nodegc: a removal that run had in flight when it died can still complete
// in the runtime. (This run's passes waited for their calls.) It updates
// exists and errs in place, and returns early when ctx ends or nothing is
// left to ask about.
func (e *Engine) settle(ctx context.Context, open []JournalEntry, exists []bool, errs []error) {
	var pending []int
	for i, in := range open {
		if exists[i] && errs[i] == nil && e.now().Sub(in.Time) < CallTimeout && !strings.HasPrefix(string(in.Pass), e.run+"/") {
			pending = append(pending, i)
		}
	}
	t := time.NewTicker(reconcilePoll)
	defer t.Stop()
	for deadline := time.Now().Add(reconcileSettle); len(pending) > 0 && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pending = slices.DeleteFunc(pending, func(i int) bool {
			exists[i], errs[i] = e.exists(ctx, open[i])
			return !exists[i] || errs[i] != nil
		})
	}
}

// exists asks whether the item of a journal intent still exists.
func (e *Engine) exists(ctx context.Context, in JournalEntry) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
	defer cancel()
	var err error
	switch in.Kind {
	case ItemImage:
		_, err = e.o.Reader.ImageStatus(ctx, in.ID)
	case ItemContainer:
		_, err = e.o.Reader.ContainerStatus(ctx, in.ID)
	case ItemSandbox:
		_, err = e.o.Reader.SandboxStatus(ctx, in.ID)
	case ItemLog:
		_, err = os.Lstat(in.ID)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
	default:
		return false, fmt.Errorf("unknown kind %q", in.Kind)
	}
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
