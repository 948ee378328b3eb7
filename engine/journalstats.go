package engine

import (
	"bytes"
	"encoding/json"
	"maps"
	"sync"
)

// JournalStats counts what the deletion journal wrote since the engine
// opened it: the lines that reached the file, by op, the reconciled
// outcomes among them, and the writes and syncs that failed. The agent
// serves them as metrics.
type JournalStats struct {
	// Lines counts the lines written, by op (intent, removed, …).
	Lines map[JournalOp]int64
	// Reconciled counts the outcomes written by reconciliation for
	// intents a crash left open, by op (removed, not-removed).
	Reconciled map[JournalOp]int64
	// FailedWrites counts the writes and syncs that failed.
	FailedWrites int64
}

// JournalStats returns the journal's counts; zero for an engine without a
// journal (read-only, or no state dir).
func (e *Engine) JournalStats() JournalStats {
	if e.journal == nil {
		return JournalStats{}
	}
	if cw, ok := e.journal.w.(*countingWriter); ok {
		return cw.stats()
	}
	return JournalStats{}
}

// countingWriter is the journal's file with counts: it reads the op of
// each line it writes (a line is one JSON entry), and counts failed writes
// and syncs. A write that fails counts none of its lines.
type countingWriter struct {
	w syncWriter

	mu sync.Mutex
	st JournalStats
}

// Write writes p and counts its lines.
func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.st.FailedWrites++
		return n, err
	}
	if c.st.Lines == nil {
		c.st.Lines, c.st.Reconciled = map[JournalOp]int64{}, map[JournalOp]int64{}
	}
	for line := range bytes.Lines(p) {
		var l struct {
			Op         JournalOp `json:"op"`
			Reconciled bool      `json:"reconciled"`
		}
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		c.st.Lines[l.Op]++
		if l.Reconciled {
			c.st.Reconciled[l.Op]++
		}
	}
	return n, nil
}

// Sync syncs the file, counting a failure.
func (c *countingWriter) Sync() error {
	err := c.w.Sync()
	if err != nil {
		c.mu.Lock()
		c.st.FailedWrites++
		c.mu.Unlock()
	}
	return err
}

// stats returns a copy of the counts.
func (c *countingWriter) stats() JournalStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	st.Lines, st.Reconciled = maps.Clone(st.Lines), maps.Clone(st.Reconciled)
	return st
}
