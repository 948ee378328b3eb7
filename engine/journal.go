package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// journalFile is the name of the deletion journal in the state dir; its
// older segments are journalFile.1 (the newest) to
// journalFile.<journalSegments>.
const journalFile = "journal.jsonl"

// JournalPath is the journal's current file in stateDir, as the
// dashboard's journal view (L) names and reads it.
func JournalPath(stateDir string) string { return filepath.Join(stateDir, journalFile) }

// journalSegments is how many old segments the journal keeps. The journal
// is rotated at a checkpoint (no intent open) once it is larger than
// journalSegmentLimit, so its history is bounded, and the segment being
// written holds every open intent: a start reads only its tail.
const journalSegments = 4

// journalSegmentLimit is the size past which the journal is rotated at
// its next checkpoint (8 MiB, about 25,000 lines); tests lower it.
var journalSegmentLimit int64 = 8 << 20

// segmentName is the file of the journal's segment k (0: the current
// one).
func segmentName(k int) string {
	if k == 0 {
		return journalFile
	}
	return fmt.Sprintf("%s.%d", journalFile, k)
}

// journalReserve is the free space a pass wants in the state dir's
// filesystem before it starts, per planned item (a journal line is about
// 300 bytes) plus a fixed margin: a pass that cannot journal does not start.
const (
	journalBytesPerItem = 1 << 10
	journalReserveBase  = 1 << 20
)

// syncWriter is where the journal's lines go: the file, or in tests a
// writer that fails.
type syncWriter interface {
	io.Writer
	Sync() error
}

// journal is the append-only, write-ahead deletion journal: one JSON line
// per intent and per outcome. It is opened once, without following a
// symlink. Concurrent writers are group-committed: the lines that arrive
// while a write is in flight go out together in the next one, with one
// fsync for the group. A write error is returned to the executor, which
// stops the pass before the next removal; after it every write fails until
// the next pass cuts whatever the failed write left and starts again.
type journal struct {
	mu   sync.Mutex
	cond *sync.Cond
	dir  string
	f    *os.File
	w    syncWriter // f, unless a test wraps it
	// counts are what was written (Engine.JournalStats).
	counts journalCounts
	// free reports the free bytes of the journal's filesystem; nil means
	// fstatfs (tests replace it).
	free func() (int64, error)

	buf      []byte   // lines waiting for the next group
	ops      []lineOp // the ops of buf's lines, for the counts
	batch    uint64   // the group now filling
	flushed  uint64   // the last group on disk
	appended uint64   // appends to buf so far
	written  uint64   // the appends handed to write(2) (not necessarily synced)
	size     int64    // the current segment's bytes; changed only by the writer holding flushing
	// since counts the lines appended after the last checkpoint.
	since    int
	flushing bool
	err      error // the failed write; sticky until reset
	dirty    bool  // lines written by writeLazy since the last sync
}

// openJournal opens (creating) the journal in dir, positioned at its
// end. repair cuts a torn last line before the first write.
func openJournal(dir string) (*journal, error) {
	f, err := openStateFile(dir, journalFile, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	jr := &journal{dir: dir, f: f, w: f, batch: 1, size: fi.Size()}
	jr.cond = sync.NewCond(&jr.mu)
	return jr, nil
}

// healthy reports whether no write of the journal failed since the last
// reset (a nil journal, none kept, is healthy).
func (j *journal) healthy() bool {
	if j == nil {
		return true
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err == nil
}

// reset readies the journal for a pass after a failed write: it clears
// the error, and repairs what the failure left. It returns a note when
// it cut something.
func (j *journal) reset() (string, error) {
	if j == nil {
		return "", nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		return "", nil
	}
	j.takeLocked() // the lines queued behind the failed write are dropped, and so are their counts
	note, err := j.repairLocked()
	if err == nil {
		j.err = nil
	}
	return note, err
}

// repair cuts a torn last line, left by a crash or a full disk in the
// middle of a write, so the next line does not glue onto it, and
// returns a note when it cut something.
func (j *journal) repair() (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.repairLocked()
}

// repairLocked is repair with j.mu held.
func (j *journal) repairLocked() (string, error) {
	note, err := repairTail(j.f)
	if err != nil {
		return "", fmt.Errorf("repair journal: %w", err)
	}
	end, err := j.f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", fmt.Errorf("repair journal: %w", err)
	}
	j.size = end
	return note, nil
}

// repairTail truncates f after its last newline when the file does not end
// with one, and syncs it. It returns a note of what it cut for the pass's
// report, "" when the file ended with a newline (or is empty).
func repairTail(f *os.File) (note string, err error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return "", err
	}
	size := fi.Size()
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return "", err
	}
	if last[0] == '\n' {
		return "", nil
	}
	// Find the last newline, reading backwards in blocks.
	const block = 64 << 10
	end := size
	for end > 0 {
		start := max(end-block, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			keep := start + int64(i) + 1
			if err := f.Truncate(keep); err != nil {
				return "", err
			}
			return fmt.Sprintf("journal %s: cut a torn last line of %d bytes", f.Name(), size-keep), f.Sync()
		}
		end = start
	}
	if err := f.Truncate(0); err != nil {
		return "", err
	}
	return fmt.Sprintf("journal %s: cut a torn line of %d bytes", f.Name(), size), f.Sync()
}

// encodeLines encodes the entries as JSON lines.
func encodeLines(entries []JournalEntry) (*bytes.Buffer, error) {
	var enc bytes.Buffer
	for _, e := range entries {
		if err := json.NewEncoder(&enc).Encode(e); err != nil {
			return nil, fmt.Errorf("encode journal line: %w", err)
		}
	}
	return &enc, nil
}

// encode encodes the entries as JSON lines; nil (and no error) for a nil
// journal or no entries, which the writers accept and drop.
func (j *journal) encode(entries []JournalEntry) ([]byte, error) {
	if j == nil || len(entries) == 0 {
		return nil, nil
	}
	enc, err := encodeLines(entries)
	if err != nil {
		return nil, err
	}
	return enc.Bytes(), nil
}

// write appends the entries and returns once they are on disk (synced),
// sharing the write and the fsync with every line other goroutines add
// meanwhile. A nil journal accepts and drops entries.
func (j *journal) write(entries ...JournalEntry) error {
	return j.queue(entries, j.flushedLocked)
}

// flushedLocked returns once the group now filling is on disk, leading
// its write and fsync unless another writer does; j.mu is held and
// released meanwhile.
func (j *journal) flushedLocked(uint64) error {
	mine := j.batch
	for j.flushed < mine {
		if j.err != nil {
			return j.err
		}
		if j.flushing {
			j.cond.Wait()
			continue
		}
		// Lead the group: write everything queued so far.
		j.flushing = true
		n := j.batch
		q, upto := j.takeLocked()
		j.batch++
		j.mu.Unlock()
		err := j.flush(q)
		j.mu.Lock()
		j.flushing = false
		if err != nil {
			j.err = err
		} else {
			j.flushed, j.written = n, max(j.written, upto)
		}
		j.cond.Broadcast()
	}
	return nil
}

// appendLocked queues the encoded lines of entries and returns their
// append number; j.mu is held.
func (j *journal) appendLocked(b []byte, entries []JournalEntry) uint64 {
	j.buf = append(j.buf, b...)
	j.appended++
	for _, e := range entries {
		j.ops = append(j.ops, lineOp{e.Op, e.Reconciled})
		if e.Op == JournalCheckpoint {
			j.since = 0
		} else {
			j.since++
		}
	}
	return j.appended
}

// queued is a group of lines taken from the queue, with their ops.
type queued struct {
	buf []byte
	ops []lineOp
}

// takeLocked hands the queued lines to the caller, which writes them, with
// the append number they reach; j.mu is held.
func (j *journal) takeLocked() (queued, uint64) {
	q := queued{j.buf, j.ops}
	j.buf, j.ops = nil, nil
	return q, j.appended
}

// flush writes and syncs one group; j.mu is not held.
func (j *journal) flush(q queued) error {
	if err := j.put(q); err != nil {
		return err
	}
	if err := j.w.Sync(); err != nil {
		j.counts.failed()
		return fmt.Errorf("sync journal: %w", err)
	}
	return nil
}

// put writes lines to the file; its callers hold the flushing flag, so
// one writes at a time.
func (j *journal) put(q queued) error {
	if len(q.buf) == 0 {
		return nil
	}
	n, err := j.w.Write(q.buf)
	j.size += int64(n)
	if err != nil {
		j.counts.failed()
		return fmt.Errorf("append to journal: %w", err)
	}
	j.counts.written(q.ops)
	return nil
}

// checkpointLine is the line that says no intent before it is open.
func checkpointLine(now time.Time) JournalEntry {
	return JournalEntry{Time: now, Op: JournalCheckpoint}
}

// needsCheckpoint reports whether lines were written since the last
// checkpoint.
func (j *journal) needsCheckpoint() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.since > 0
}

// rotate starts a new segment when the current one is larger than
// journalSegmentLimit and ends on a checkpoint (its caller just synced
// one, with no writer left): no intent is open, so the new segment needs
// nothing of the old. The segments shift by one, and the oldest beyond
// journalSegments is dropped.
func (j *journal) rotate() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil || j.flushing || j.since > 0 || len(j.buf) > 0 || j.size <= journalSegmentLimit {
		return j.err
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("rotate journal: %w", err)
	}
	for k := journalSegments; k >= 1; k-- {
		err := os.Rename(filepath.Join(j.dir, segmentName(k-1)), filepath.Join(j.dir, segmentName(k)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotate journal: %w", err)
		}
	}
	f, err := openStateFile(j.dir, journalFile, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		j.err = fmt.Errorf("rotate journal: %w", err)
		return j.err
	}
	if d, err := os.Open(j.dir); err == nil {
		d.Sync()
		d.Close()
	}
	// The writer follows the file; a test's writer stays. No write is in
	// flight here.
	if j.w == syncWriter(j.f) {
		j.w = f
	}
	j.f.Close()
	j.f, j.size = f, 0
	return nil
}

// rotateNoted rotates the journal (rotate) and returns a note for the
// report when that failed.
func (j *journal) rotateNoted(log *slog.Logger) []string {
	if err := j.rotate(); err != nil {
		log.Error("rotate journal", "err", err)
		return []string{fmt.Sprintf("journal not rotated: %v", err)}
	}
	return nil
}

// writeLazy writes the entries without waiting for them to be synced: the
// next group's fsync (or sync) makes them durable. It is for outcome
// lines: an outcome a crash loses leaves its intent open, and the next
// start's reconciliation asks the runtime. Lines that arrive while another
// write is in flight are queued and go out with the next write (a group
// write, one syscall), or at sync; a write error (a full disk) is seen by
// the caller that wrote, and by every writer after it (and failed). A nil
// return therefore does not say the lines reached the file: a queued line
// is lost when a later write fails, and the executor, which then sees
// failed, leaves its intent to the next pass's reconciliation.
func (j *journal) writeLazy(entries ...JournalEntry) error {
	return j.queue(entries, func(uint64) error {
		j.dirty = true
		if j.flushing {
			return nil
		}
		j.putQueuedLocked()
		return j.err
	})
}

// queue encodes the entries and queues their lines for the next group,
// then returns what then returns, called with j.mu held and the lines'
// append number: the prologue the three writers share. A nil journal, or
// no entries, queues nothing; a journal whose write failed queues nothing
// more until reset.
func (j *journal) queue(entries []JournalEntry, then func(mine uint64) error) error {
	b, err := j.encode(entries)
	if b == nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	return then(j.appendLocked(b, entries))
}

// putQueuedLocked leads a group write of everything queued, without an
// fsync; the group's batch stays open, so a durable writer queued in it
// still leads its own fsync. j.mu is held and released meanwhile; the
// caller has checked that no write is in flight.
func (j *journal) putQueuedLocked() {
	j.flushing = true
	q, upto := j.takeLocked()
	j.mu.Unlock()
	err := j.put(q)
	j.mu.Lock()
	j.flushing = false
	if err != nil && j.err == nil {
		j.err = err
	}
	if err == nil {
		j.written = max(j.written, upto)
	}
	j.cond.Broadcast()
}

// writeOut writes the entries and returns once they were handed to the
// kernel (write(2)), without waiting for an fsync: for the started line
// before a removal call. A line written so survives the process being
// killed (the page cache keeps it), not a crash of the machine; the intent
// line's boot ID lets reconciliation tell the two apart. Lines other
// goroutines queue meanwhile go out in the same write.
func (j *journal) writeOut(entries ...JournalEntry) error {
	return j.queue(entries, func(mine uint64) error {
		j.dirty = true
		for j.written < mine {
			switch {
			case j.err != nil:
				return j.err
			case j.flushing:
				j.cond.Wait()
			default:
				j.putQueuedLocked()
			}
		}
		return nil
	})
}

// sync makes every line written so far durable, writing the queued ones
// first; the executor calls it at the end of a pass, when no writer is
// left.
func (j *journal) sync() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.flushing {
		j.cond.Wait()
	}
	if j.err != nil || !j.dirty {
		return j.err
	}
	q, upto := j.takeLocked()
	if err := j.flush(q); err != nil {
		j.err = err
		return j.err
	}
	j.written = max(j.written, upto)
	j.dirty = false
	return nil
}

// failed returns the error of a failed write, which every later write
// returns too until reset.
func (j *journal) failed() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// checkSpace returns an error when the journal's filesystem has less free
// space than a pass of items planned removals needs.
func (j *journal) checkSpace(items int) error {
	if j == nil {
		return nil
	}
	free, err := j.freeBytes()
	if err != nil {
		return nil // cannot tell: the write errors will stop the pass
	}
	need := int64(journalReserveBase) + int64(items)*journalBytesPerItem
	if free < need {
		return fmt.Errorf("the state dir %s has %d bytes free, and the journal of %d removals needs about %d: free space there first", j.dir, free, items, need)
	}
	return nil
}

// freeBytes is the free space of the journal's filesystem.
func (j *journal) freeBytes() (int64, error) {
	if j.free != nil {
		return j.free()
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(j.f.Fd()), &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
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

// ReadJournal returns the deletions recorded in the journal in stateDir,
// oldest first: the outcome line of every item removed (lines of a journal
// written before intents existed count as removals). Intent lines and the
// other outcomes are in ReadJournalLines. A missing journal is empty. It
// never follows a symlink or blocks on a FIFO.
func ReadJournal(stateDir string) ([]JournalEntry, error) {
	all, err := ReadJournalLines(stateDir)
	var out []JournalEntry
	for _, e := range all {
		if e.Op == "" || e.Op == JournalRemoved {
			out = append(out, e)
		}
	}
	return out, err
}

// ReadJournalLines returns the intent and outcome lines of the journal in
// stateDir, its kept old segments first, oldest first; the started and
// checkpoint lines, which only reconciliation reads, are left out. A
// missing journal is empty.
func ReadJournalLines(stateDir string) ([]JournalEntry, error) {
	all, err := readJournalAll(stateDir)
	return slices.DeleteFunc(all, func(e JournalEntry) bool { return e.Op == JournalStarted || e.Op == JournalCheckpoint }), err
}

// readJournalAll returns every line of the journal's segments in
// stateDir, oldest first. A missing journal is empty.
func readJournalAll(stateDir string) ([]JournalEntry, error) {
	var out []JournalEntry
	for k := journalSegments; k >= 0; k-- {
		name := segmentName(k)
		f, err := openStateFile(stateDir, name, os.O_RDONLY)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("read journal %s: %w", filepath.Join(stateDir, name), err)
		}
		err = decodeLines(f, func(e JournalEntry) { out = append(out, e) })
		f.Close()
		if err != nil {
			return out, fmt.Errorf("read journal %s: %w", filepath.Join(stateDir, name), err)
		}
	}
	return out, nil
}

// decodeLines calls fn with each line of r, streaming.
func decodeLines(r io.Reader, fn func(JournalEntry)) error {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	for n := 1; dec.More(); n++ {
		var e JournalEntry
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		fn(e)
	}
	return nil
}

// checkpointMark is how a checkpoint line reads in the file; a quote in
// an ID or a reason is escaped, so nothing else can read so.
var checkpointMark = []byte(`"op":"checkpoint"`)

// readOpenIntents returns the open intents of the journal in stateDir
// (with whether each has a started line) and how many lines follow its
// last checkpoint. It reads only the current segment (rotation happens at
// a checkpoint) from the start of its last checkpoint line, streaming, so
// its time is the tail's and its memory the open intents'.
func readOpenIntents(stateDir string) ([]openIntent, int, error) {
	f, err := openStateFile(stateDir, journalFile, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("read journal: %w", err)
	}
	from, err := lastCheckpoint(f, fi.Size())
	if err != nil {
		return nil, 0, fmt.Errorf("read journal: %w", err)
	}
	type entry struct {
		openIntent
		seq int
	}
	open := map[journalKey]*entry{}
	tail := 0
	err = decodeLines(io.NewSectionReader(f, from, fi.Size()-from), func(e JournalEntry) {
		k := journalKey{e.Pass, e.Kind, e.ID}
		switch e.Op {
		case JournalCheckpoint:
			clear(open)
			tail = 0
			return
		case JournalIntent:
			open[k] = &entry{openIntent{JournalEntry: e}, tail}
		case JournalStarted:
			if in, ok := open[k]; ok {
				in.started = true
			}
		case "":
		default:
			delete(open, k)
		}
		tail++
	})
	if err != nil {
		return nil, tail, fmt.Errorf("read journal %s: %w", filepath.Join(stateDir, journalFile), err)
	}
	sorted := make([]*entry, 0, len(open))
	for _, in := range open {
		sorted = append(sorted, in)
	}
	slices.SortFunc(sorted, func(a, b *entry) int { return a.seq - b.seq })
	out := make([]openIntent, len(sorted))
	for i, in := range sorted {
		out[i] = in.openIntent
	}
	return out, tail, nil
}

// lastCheckpoint returns the offset of the start of the last checkpoint
// line of f (size bytes), or 0; it reads backwards in blocks.
func lastCheckpoint(f *os.File, size int64) (int64, error) {
	const block = 64 << 10
	buf := make([]byte, block+len(checkpointMark))
	for end := size; end > 0; {
		start := max(end-block, 0)
		// Overlap the next block by the mark's length, so a mark across
		// the boundary is found.
		b := buf[:min(end+int64(len(checkpointMark)), size)-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndex(b, checkpointMark); i >= 0 {
			at := start + int64(i)
			// The line starts at the newline before the mark: a
			// checkpoint line holds no more than a time before it.
			head := make([]byte, min(at, 256))
			if _, err := f.ReadAt(head, at-int64(len(head))); err != nil {
				return 0, err
			}
			return at - int64(len(head)) + int64(bytes.LastIndexByte(head, '\n')+1), nil
		}
		end = start
	}
	return 0, nil
}

// journalKey identifies an item within a pass, to match an intent with its
// outcome.
type journalKey struct {
	pass JournalPass
	kind ItemKind
	id   string
}

// OpenIntents returns the intent lines of a journal (ReadJournalLines) that
// have no outcome line after them, oldest first: what the next start's
// reconciliation settles, and what a journal that accounts for every
// removal has none of.
func OpenIntents(lines []JournalEntry) []JournalEntry {
	open := map[journalKey]int{}
	for i, e := range lines {
		k := journalKey{e.Pass, e.Kind, e.ID}
		switch e.Op {
		case JournalIntent:
			open[k] = i
		case "":
		default:
			delete(open, k)
		}
	}
	var out []JournalEntry
	for i, e := range lines {
		if j, ok := open[journalKey{e.Pass, e.Kind, e.ID}]; ok && j == i {
			out = append(out, e)
		}
	}
	return out
}
