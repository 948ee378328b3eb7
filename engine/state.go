package engine

// The names below are the state room's, under the engine's name, so that
// callers keep writing engine.ReadJournal and engine.StateDirError.

import (
	"context"

	"github.com/nodegc/nodegc/engine/state"
)

// StateDirError is [state.StateDirError].
type StateDirError = state.StateDirError

// JournalStats is [state.JournalStats].
type JournalStats = state.JournalStats

// ErrStateDirBusy is [state.ErrStateDirBusy].
var ErrStateDirBusy = state.ErrStateDirBusy

// ErrRuntimeBusy is [state.ErrRuntimeBusy].
var ErrRuntimeBusy = state.ErrRuntimeBusy

// RuntimeLockDirEnv is [state.RuntimeLockDirEnv].
const RuntimeLockDirEnv = state.RuntimeLockDirEnv

// DefaultRuntimeLockDir is [state.DefaultRuntimeLockDir].
const DefaultRuntimeLockDir = state.DefaultRuntimeLockDir

// CheckStateDir is [state.CheckStateDir].
func CheckStateDir(dir string) error { return state.CheckStateDir(dir) }

// JournalPath is [state.JournalPath].
func JournalPath(stateDir string) string { return state.JournalPath(stateDir) }

// ReadJournal is [state.ReadJournal].
func ReadJournal(stateDir string) ([]JournalEntry, error) { return state.ReadJournal(stateDir) }

// ReadJournalLines is [state.ReadJournalLines].
func ReadJournalLines(stateDir string) ([]JournalEntry, error) {
	return state.ReadJournalLines(stateDir)
}

// OpenIntents is [state.OpenIntents].
func OpenIntents(lines []JournalEntry) []JournalEntry { return state.OpenIntents(lines) }

// JournalStats returns the journal's counts; zero for an engine without a
// journal (read-only, or no state dir).
func (e *Engine) JournalStats() JournalStats { return e.journal.Stats() }

// passHost is the Engine as a pass's Host: its ImageFs, and readying its
// journal.
type passHost struct{ *Engine }

// ReadyJournal readies the journal for a pass of items planned removals
// (containers of them): it cuts what a failed write left and refuses a
// pass its filesystem has no room to journal, then (unless ctx is done)
// settles the intents an earlier pass left open (reconcileLocked). It
// returns the notes for the pass's report, and clean: no intent of an
// earlier pass is open, so the pass may end on a checkpoint.
func (h passHost) ReadyJournal(ctx context.Context, items, containers int) (notes []string, clean bool, err error) {
	e := h.Engine
	note, err := e.journal.Reset()
	if err != nil {
		return nil, false, err
	}
	if note != "" {
		e.log.Warn("journal repaired", "note", note)
		notes = append(notes, note)
	}
	// Each item takes two lines (its intent and its outcome), a container
	// up to four more for its logs.
	if err := e.journal.CheckSpace(2*items + 4*containers); err != nil {
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
	return notes, e.rec.Done(), nil
}

// reconcileLocked settles the intents an earlier, interrupted pass left
// open (state.Reconciler.Reconcile); nothing for an engine without a
// journal. It returns notes for the next report; e.mu is held.
func (e *Engine) reconcileLocked(ctx context.Context) []string {
	if e.rec == nil {
		return nil
	}
	return e.rec.Reconcile(ctx)
}
