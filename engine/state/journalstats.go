package state

import (
	"maps"
	"sync"

	"github.com/nodegc/nodegc/engine/model"
)

// JournalStats counts what the deletion journal wrote since the engine
// opened it: the lines that reached the file, by op, the reconciled
// outcomes among them, and the writes and syncs that failed. The agent
// serves them as metrics.
type JournalStats struct {
	// Lines counts the lines written, by op (intent, removed, …).
	Lines map[model.JournalOp]int64
	// Reconciled counts the outcomes written by reconciliation for
	// intents a crash left open, by op (removed, not-removed).
	Reconciled map[model.JournalOp]int64
	// FailedWrites counts the writes and syncs that failed.
	FailedWrites int64
}

// lineOp is what the counts need of one queued line.
type lineOp struct {
	op         model.JournalOp
	reconciled bool
}

// journalCounts are the journal's counts. Each line's op is known when
// it is queued, so a write is counted by the ops it carried, not by
// reading back the bytes it wrote (decoding every line again was a twelfth
// of a large pass's CPU). A write that fails counts none of its lines.
type journalCounts struct {
	mu sync.Mutex
	st JournalStats
}

// written counts the lines of a write that reached the file.
func (c *journalCounts) written(lines []lineOp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.Lines == nil {
		c.st.Lines, c.st.Reconciled = map[model.JournalOp]int64{}, map[model.JournalOp]int64{}
	}
	for _, l := range lines {
		c.st.Lines[l.op]++
		if l.reconciled {
			c.st.Reconciled[l.op]++
		}
	}
}

// failed counts a write or a sync that failed.
func (c *journalCounts) failed() {
	c.mu.Lock()
	c.st.FailedWrites++
	c.mu.Unlock()
}

// stats returns a copy of the counts.
func (c *journalCounts) stats() JournalStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	st.Lines, st.Reconciled = maps.Clone(st.Lines), maps.Clone(st.Reconciled)
	return st
}
