package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// reconcileSettle and reconcilePoll bound Engine.settle: how long, and
// how often, reconciliation asks again about an item whose removal call an
// earlier run may have had in flight before it journals it. A killed
// nodegc's RemoveImage has been seen to delete the image in containerd
// after the CRI cache, which ImageStatus reads, was asked.
var (
	reconcileSettle = 2 * time.Second
	reconcilePoll   = 50 * time.Millisecond
)

// reconcileBudget bounds one reconciliation, its settling included: a
// runtime that hangs must not hold back the first snapshot (the dashboard
// shows nothing until it has one) or a quit. What it could not ask about
// stays open, and is tried again after reconcileRetry, or at once after a
// pass whose journal write failed.
var (
	reconcileBudget = 5 * time.Second
	reconcileRetry  = time.Minute
)

// bootID is the machine's boot ID, or "" where it cannot be read (then no
// started line's absence is trusted).
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// openIntent is an intent without an outcome, and whether its started
// line was found.
type openIntent struct {
	JournalEntry
	started bool
}

// callNeverSent reports whether the journal proves that the intent's
// removal call was never sent: the started line is written (handed to the
// kernel) before the call, so its absence is proof for a process that was
// killed, since the kernel keeps what it was handed; a crash of the
// machine can lose it, so only within the boot that wrote the intent.
func callNeverSent(in openIntent, boot string) bool {
	return !in.started && in.Boot != "" && in.Boot == boot
}

// reusable reports whether an item of the kind can exist again after its
// removal: an image (pulled again, under the same ID) or a log path. A
// container or sandbox ID is never reused.
func reusable(k ItemKind) bool { return k == ItemImage || k == ItemLog }

// reconcileOp is the outcome reconciliation journals for an open intent
// whose item exists or not (when the call may have been sent), with the
// reason in words: never removed for an item whose call may not have been
// sent, never not-removed for one the call may have removed.
func reconcileOp(in openIntent, neverSent, exists bool) (JournalOp, string) {
	switch {
	case neverSent:
		return JournalNotRun, "its removal call was never sent"
	case in.started && !exists:
		return JournalRemoved, ""
	case !exists:
		return JournalUnknown, "gone, but the machine restarted since its intent, which may have lost the line saying whether its removal call was sent"
	case !reusable(in.Kind):
		return JournalNotRemoved, ""
	case in.started:
		return JournalUnknown, "still there, but its removal call was sent: it may have removed the item, which was then created again"
	default:
		return JournalUnknown, "still there, but the machine restarted since its intent: its removal call may have been sent, and the item created again"
	}
}

// readyJournal readies the journal for a pass of items planned removals
// (containers of them): it cuts what a failed write left and refuses a
// pass its filesystem has no room to journal, then (unless ctx is done)
// settles the intents an earlier pass left open (reconcileLocked). It
// returns the notes for the pass's report, and clean: no intent of an
// earlier pass is open, so the pass may end on a checkpoint.
func (e *Engine) readyJournal(ctx context.Context, items, containers int) (notes []string, clean bool, err error) {
	note, err := e.journal.reset()
	if err != nil {
		return nil, false, err
	}
	if note != "" {
		e.log.Warn("journal repaired", "note", note)
		notes = append(notes, note)
	}
	// Each item takes two lines (its intent and its outcome), a container
	// up to four more for its logs.
	if err := e.journal.checkSpace(2*items + 4*containers); err != nil {
		return notes, false, err
	}
	if ctx.Err() != nil {
		return notes, false, nil // the pass stops before its first item
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	notes = append(notes, e.notes...)
	notes = append(notes, e.reconcileLocked(ctx)...)
	e.notes = nil
	return notes, e.reconciled, nil
}

// reconcileLocked settles the intents of an earlier, interrupted pass that
// have no outcome: an intent whose removal call was never sent is closed
// not-run; for the others it asks the runtime (or the filesystem, for
// logs) whether the item still exists and journals what that proves (see
// reconcileOp). An item it cannot ask about stays open for the next try.
// A deleting engine runs it before its first snapshot, and again after a
// pass whose journal write failed. It ends with ctx (a signal) and after
// reconcileBudget, and a round that left intents open is not tried again
// before reconcileRetry. It returns notes for the next report; e.mu is
// held.
func (e *Engine) reconcileLocked(ctx context.Context) []string {
	if e.journal == nil || e.o.Remover == nil || e.reconciled || time.Now().Before(e.reconcileAfter) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, reconcileBudget)
	defer cancel()
	notes := e.reconcileRound(ctx)
	if !e.reconciled {
		e.reconcileAfter = time.Now().Add(reconcileRetry)
	}
	return notes
}

// reconcileRound is one round of reconcileLocked, bounded by ctx.
func (e *Engine) reconcileRound(ctx context.Context) []string {
	open, tail, err := readOpenIntents(e.o.StateDir)
	if err != nil {
		return []string{fmt.Sprintf("journal not reconciled: %v", err)}
	}
	if len(open) == 0 {
		// A tail of closed lines (a journal an older nodegc wrote, or a
		// pass that ended without its checkpoint) gets one, so the next
		// start need not read it.
		if tail > 0 || e.journal.needsCheckpoint() {
			if err := e.journal.write(checkpointLine(e.now())); err != nil {
				return []string{fmt.Sprintf("journal not reconciled: %v", err)}
			}
		}
		e.reconciled = true
		return e.journal.rotateNoted(e.log)
	}
	counts := map[JournalOp]int{}
	unchecked := 0
	var outs []JournalEntry
	neverSent := make([]bool, len(open))
	exists := make([]bool, len(open))
	errs := make([]error, len(open))
	for i, in := range open {
		switch neverSent[i] = callNeverSent(in, e.boot); {
		case neverSent[i]:
		case ctx.Err() != nil:
			// Out of time (or stopped): the rest waits for the next round.
			errs[i] = ctx.Err()
		default:
			exists[i], errs[i] = e.exists(ctx, in.JournalEntry)
		}
	}
	e.settle(ctx, open, exists, errs)
	for i, in := range open {
		if errs[i] != nil {
			if unchecked++; unchecked <= 3 {
				e.log.Warn("reconcile journal intent", "kind", in.Kind, "id", in.ID, "err", errs[i])
			}
			continue
		}
		out := in.JournalEntry
		out.Boot = ""
		out.Time, out.Reconciled = e.now(), true
		out.Op, out.Error = reconcileOp(in, neverSent[i], exists[i])
		counts[out.Op]++
		outs = append(outs, out)
	}
	e.reconciled = unchecked == 0
	if e.reconciled {
		outs = append(outs, checkpointLine(e.now()))
	}
	// One group, one fsync.
	if err := e.journal.write(outs...); err != nil {
		e.reconciled = false
		return []string{fmt.Sprintf("journal not reconciled: %v", err)}
	}
	note := fmt.Sprintf("journal: reconciled %d intents an interrupted pass left without outcome: %d removed, %d still there, %d never sent, %d unknown",
		len(open)-unchecked, counts[JournalRemoved], counts[JournalNotRemoved], counts[JournalNotRun], counts[JournalUnknown])
	if unchecked > 0 {
		note += fmt.Sprintf(", %d could not be checked (left for the next try)", unchecked)
	}
	e.log.Warn(note)
	return append([]string{note}, e.journal.rotateNoted(e.log)...)
}

// settle asks again, in rounds every reconcilePoll for up to
// reconcileSettle, about the items the runtime still shows whose removal
// call may have been sent by an earlier run of nodegc in the last
// CallTimeout: a removal that run had in flight when it died can still
// complete in the runtime. (This run's passes waited for their calls.) It
// updates exists and errs in place, and returns early when ctx ends or
// nothing is left to ask about.
func (e *Engine) settle(ctx context.Context, open []openIntent, exists []bool, errs []error) {
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
			exists[i], errs[i] = e.exists(ctx, open[i].JournalEntry)
			return !exists[i] || errs[i] != nil
		})
	}
}

// exists asks whether the item of a journal intent still exists, within
// ctx.
func (e *Engine) exists(ctx context.Context, in JournalEntry) (bool, error) {
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
