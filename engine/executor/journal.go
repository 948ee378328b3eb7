package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/engine/state"
)

// passJournal writes every journal line of one pass: the intents (in
// groups, one fsync each), the started line before each removal call, the
// outcomes, the log files' own intents and outcomes, and the checkpoint
// at its end. It owns the mapping from an item's Outcome to its journal
// op. The first failed write is kept: the pool starts nothing after it.
type passJournal struct {
	j    Journal
	now  func() time.Time
	boot string
	pass model.JournalPass
	kind model.PassKind
	log  *slog.Logger
	// clean is set when no intent of an earlier pass was open at the
	// pass's start: the pass then ends on a checkpoint once all of its
	// own are closed.
	clean bool

	mu  sync.Mutex
	err error // the first failed write: the pass stops
}

// Journal is what a pass writes its lines to: the deletion journal
// (*state.Journal), with its group commit. Write waits for the fsync,
// WriteOut for the kernel, WriteLazy for neither; Failed is the first
// failed write, which every later one returns too.
type Journal interface {
	Write(entries ...model.JournalEntry) error
	WriteLazy(entries ...model.JournalEntry) error
	WriteOut(entries ...model.JournalEntry) error
	Sync() error
	Failed() error
	NeedsCheckpoint() bool
	RotateNoted(log *slog.Logger) []string
}

// newPassJournal returns the journal lines of a pass over j, which
// Host.ReadyJournal readied; clean says no intent of an earlier pass was open
// then, and boot is the machine's boot ID, written on intent lines.
func newPassJournal(j Journal, d Deps, boot, passID string, kind model.PassKind, clean bool) *passJournal {
	return &passJournal{j: j, now: d.Now, boot: boot, pass: model.JournalPass(passID), kind: kind, log: d.Log, clean: clean}
}

// stamp fills a journal line's op, time and pass, and an intent's boot
// ID.
func (pj *passJournal) stamp(op model.JournalOp, en model.JournalEntry) model.JournalEntry {
	en.Op, en.Time, en.Pass, en.PassKind = op, pj.now(), pj.pass, pj.kind
	if op == model.JournalIntent {
		en.Boot = pj.boot
	}
	return en
}

// failed returns the first failed write of the pass, or of the journal
// (a queued line whose write failed in another writer's group).
func (pj *passJournal) failed() error {
	if err := pj.j.Failed(); err != nil {
		pj.note(err)
	}
	pj.mu.Lock()
	defer pj.mu.Unlock()
	return pj.err
}

// note records a failed write: the first one stops the pass.
func (pj *passJournal) note(err error) error {
	if err == nil {
		return nil
	}
	pj.mu.Lock()
	defer pj.mu.Unlock()
	if pj.err == nil {
		pj.err = err
		pj.log.Error("journal write failed: the pass stops", "err", err, "pass", string(pj.pass))
	}
	return err
}

// intents are the tasks' intent lines, made from the plan before any of
// them starts.
func (pj *passJournal) intents(tasks []task) []model.JournalEntry {
	lines := make([]model.JournalEntry, len(tasks))
	for i, t := range tasks {
		lines[i] = pj.stamp(model.JournalIntent, *t.intent)
	}
	return lines
}

// writeIntents writes a group of intent lines and returns once they are
// on disk.
func (pj *passJournal) writeIntents(lines []model.JournalEntry) error {
	return pj.note(pj.j.Write(lines...))
}

// outcomeOp is the journal op of an item's outcome, and the error it
// carries: the one mapping from Outcome to JournalOp. An item with no
// outcome never ran.
func outcomeOp(it model.ItemResult) (model.JournalOp, string) {
	switch it.Outcome {
	case model.OutcomeRemoved:
		return model.JournalRemoved, ""
	case model.OutcomeGone:
		return model.JournalGone, ""
	case model.OutcomeFailed:
		return model.JournalFailed, it.Error
	case model.OutcomeSkipped:
		return model.JournalSkipped, it.Detail
	}
	return model.JournalNotRun, ""
}

// close writes the outcome line of a task whose intent is on disk, from
// its results (not-run when it has none), without waiting for its fsync.
func (pj *passJournal) close(t task, its []model.ItemResult) error {
	en := *t.intent
	var it model.ItemResult
	if len(its) > 0 {
		it = its[0]
	}
	var op model.JournalOp
	op, en.Error = outcomeOp(it)
	return pj.note(pj.j.WriteLazy(pj.stamp(op, en)))
}

// send removes a re-checked item: its started line is handed to the
// kernel first (without it reconciliation may take the call for never
// sent, so nothing is done when that write fails), then the stop, what
// goes first and the call are sent, each within CallTimeout of calls, and
// classified. It returns the item's result and the results of what went
// first.
func (pj *passJournal) send(calls context.Context, it model.ItemResult, rm *removal) (model.ItemResult, []model.ItemResult) {
	if err := pj.note(pj.j.WriteOut(pj.stamp(model.JournalStarted, model.JournalEntry{Kind: it.Kind, ID: it.ID}))); err != nil {
		it.Outcome, it.Error = model.OutcomeFailed, fmt.Sprintf("not removed: %v", err)
		return it, nil
	}
	if rm.stop != nil {
		if err := within(calls, rm.stop); err != nil && !errors.Is(err, model.ErrNotFound) {
			it.Outcome, it.Error = model.OutcomeFailed, fmt.Sprintf("stop %s: %v", it.Kind, err)
			return it, nil
		}
	}
	var before []model.ItemResult
	if rm.first != nil {
		before = rm.first()
		for _, b := range before {
			if b.Outcome == model.OutcomeFailed {
				it.Outcome, it.Error = model.OutcomeFailed, fmt.Sprintf("not removed: its %s was not removed first (%s)", b.Kind, b.Error)
				return it, before
			}
		}
	}
	it = outcome(it, rm.what, within(calls, rm.call))
	if it.Outcome == model.OutcomeRemoved && len(rm.log) > 0 {
		pj.log.Info("removed "+string(it.Kind), append(rm.log, "reason", it.Reason, "pass", string(pj.pass))...)
	}
	return it, before
}

// within sends one mutating call with CallTimeout of calls.
func within(calls context.Context, call func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(calls, CallTimeout)
	defer cancel()
	return call(ctx)
}

// removeOwn journals an intent of its own, removes and journals the
// outcome: for the log file and link removed with a container. Without
// its intent line on disk the item is not removed.
func (pj *passJournal) removeOwn(calls context.Context, it model.ItemResult, en model.JournalEntry, rm *removal) model.ItemResult {
	en.Kind, en.ID = it.Kind, it.ID
	if err := pj.note(pj.j.Write(pj.stamp(model.JournalIntent, en))); err != nil {
		it.Outcome, it.Error = model.OutcomeFailed, fmt.Sprintf("not removed: %v", err)
		return it
	}
	it, _ = pj.send(calls, it, rm)
	var op model.JournalOp
	op, en.Error = outcomeOp(it)
	if jerr := pj.note(pj.j.WriteLazy(pj.stamp(op, en))); jerr != nil && it.Error == "" {
		it.Error = fmt.Sprintf("journal: %v", jerr)
	}
	return it
}

// end makes every line of the pass durable. The outcome lines were
// written (or queued) without waiting for their fsync; when the sync
// fails, queued lines are lost and the pass's intents are settled by the
// next pass's reconciliation. When every intent is closed (none of an
// earlier pass was open, and no write of this one failed) the pass ends
// on a checkpoint in the same fsync, and the journal is rotated there
// when it is large (notes says when that failed).
func (pj *passJournal) end() (notes []string, err error) {
	clean := pj.clean && pj.failed() == nil
	if clean && pj.j.NeedsCheckpoint() {
		clean = pj.j.WriteLazy(state.CheckpointLine(pj.now())) == nil
	}
	if err := pj.note(pj.j.Sync()); err != nil {
		return nil, err
	}
	if clean && pj.failed() == nil {
		return pj.j.RotateNoted(pj.log), nil
	}
	return nil, nil
}

// outcome classifies a removal call's error: nil is success, NotFound
// means the item is already gone, anything else is a failure recorded on
// the item.
func outcome(it model.ItemResult, what string, err error) model.ItemResult {
	switch {
	case err == nil:
		it.Outcome = model.OutcomeRemoved
	case errors.Is(err, model.ErrNotFound):
		it.Outcome = model.OutcomeGone
	default:
		it.Outcome = model.OutcomeFailed
		it.Error = fmt.Sprintf("%s: %v", what, err)
	}
	return it
}
