package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// journalFile is the name of the deletion journal in the state dir.
const journalFile = "journal.jsonl"

// journalReserve is the free space a pass wants in the state dir's
// filesystem before it starts, per planned item (a journal line is about
// 300 bytes) plus a fixed margin: a pass that cannot journal does not start.
const (
	journalBytesPerItem = 1 << 10
	journalReserveBase  = 1 << 20
)

// journal is the append-only deletion journal: one JSON line per deletion,
// synced to disk before the pass goes on. It is opened once, without
// following a symlink, and a write error is returned to the executor,
// which stops the pass before the next removal.
type journal struct {
	mu   sync.Mutex
	dir  string
	f    *os.File
	fail func() error // test hook: an error to return instead of writing
}

// openJournal opens (creating) the journal in dir. A torn last line, left
// by a crash or a full disk in the middle of a write, is cut off so the
// next line does not glue onto it; repaired says so.
func openJournal(dir string) (j *journal, repaired error, err error) {
	f, err := openStateFile(dir, journalFile, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	if repaired, err = repairTail(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	return &journal{dir: dir, f: f}, repaired, nil
}

// repairTail truncates f after its last newline when the file does not end
// with one.
func repairTail(f *os.File) (error, error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil, err
	}
	size := fi.Size()
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return nil, err
	}
	if last[0] == '\n' {
		return nil, nil
	}
	// Find the last newline, reading backwards in blocks.
	const block = 64 << 10
	end := size
	for end > 0 {
		start := max(end-block, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			keep := start + int64(i) + 1
			if err := f.Truncate(keep); err != nil {
				return nil, err
			}
			return fmt.Errorf("journal %s: cut a torn last line of %d bytes", f.Name(), size-keep), f.Sync()
		}
		end = start
	}
	if err := f.Truncate(0); err != nil {
		return nil, err
	}
	return fmt.Errorf("journal %s: cut a torn line of %d bytes", f.Name(), size), f.Sync()
}

// append writes the entries and syncs them to disk. A nil journal accepts
// and drops entries.
func (j *journal) append(entries ...JournalEntry) error {
	if j == nil || len(entries) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("encode journal line: %w", err)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		if err := j.fail(); err != nil {
			return fmt.Errorf("append to journal: %w", err)
		}
	}
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("append to journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	return nil
}

// checkSpace returns an error when the journal's filesystem has less free
// space than a pass of items planned removals needs.
func (j *journal) checkSpace(items int) error {
	if j == nil {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(j.f.Fd()), &st); err != nil {
		return nil // cannot tell: the write errors will stop the pass
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	need := int64(journalReserveBase) + int64(items)*journalBytesPerItem
	if free < need {
		return fmt.Errorf("the state dir %s has %d bytes free, and the journal of %d removals needs about %d: free space there first", j.dir, free, items, need)
	}
	return nil
}

// close closes the journal file.
func (j *journal) close() error {
	if j == nil || j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// ReadJournal returns every entry of the deletion journal in stateDir, oldest
// first. A missing journal is empty. It never follows a symlink or blocks on
// a FIFO.
func ReadJournal(stateDir string) ([]JournalEntry, error) {
	data, err := readStateFile(stateDir, journalFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", filepath.Join(stateDir, journalFile), err)
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
