package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// journalFile is the name of the deletion journal in the state dir.
const journalFile = "journal.jsonl"

// journal is the append-only deletion journal: one JSON line per deletion.
type journal struct {
	mu   sync.Mutex
	path string
}

// openJournal returns the journal in dir, or nil when dir is "".
func openJournal(dir string) *journal {
	if dir == "" {
		return nil
	}
	return &journal{path: filepath.Join(dir, journalFile)}
}

// append writes the entries and syncs them to disk. A nil journal accepts
// and drops entries.
func (j *journal) append(entries ...JournalEntry) error {
	if j == nil || len(entries) == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return fmt.Errorf("append to journal: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync journal: %w", err)
	}
	return f.Close()
}

// ReadJournal returns every entry of the deletion journal in stateDir, oldest
// first. A missing journal is empty.
func ReadJournal(stateDir string) ([]JournalEntry, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, journalFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	var out []JournalEntry
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var e JournalEntry
		if err := dec.Decode(&e); err != nil {
			return out, fmt.Errorf("read journal line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}
