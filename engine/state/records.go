package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nodegc/nodegc/internal/safefile"

	"github.com/nodegc/nodegc/engine/model"
)

// RecordsFile is the name of the image records file in the state dir.
const RecordsFile = "image-records.json"

// RecordsMaxStale is how old the persisted last-used times of the images
// in use may grow before a snapshot writes them again though nothing else
// changed: a crash loses at most this much of them (an image's last use
// is then read as up to this much earlier after a restart). The kubelet
// keeps its records in memory and loses them all at a restart; nodegc
// keeps them, without an fsync at every pass of an idle node.
const RecordsMaxStale = 5 * time.Minute

// recordsDoc is the on-disk form of the image records.
type recordsDoc struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	SavedAt    time.Time           `json:"savedAt"`
	Records    []model.ImageRecord `json:"records"`
}

// LoadRecords reads the records from dir, never following a symlink or
// blocking on a FIFO. A missing file is no records and no error (found is
// false). A corrupt file is reported in warning and the engine starts
// fresh, as if the file were missing; with moveAside (an engine that owns
// the dir) it is also moved to <file>.corrupt-<unix time>.
func LoadRecords(dir string, now time.Time, moveAside bool) (recs map[string]model.ImageRecord, found bool, warning error, err error) {
	path := filepath.Join(dir, RecordsFile)
	data, err := ReadFile(dir, RecordsFile)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]model.ImageRecord{}, false, nil, nil
	}
	if err != nil {
		return nil, false, nil, fmt.Errorf("read image records: %w", err)
	}
	var doc recordsDoc
	derr := json.Unmarshal(data, &doc)
	if derr == nil && doc.Kind != "ImageRecords" {
		derr = fmt.Errorf("kind %q, want ImageRecords", doc.Kind)
	}
	if derr == nil {
		for i, r := range doc.Records {
			if r.ID == "" {
				derr = fmt.Errorf("records[%d].id: required", i)
				break
			}
		}
	}
	if derr != nil && !moveAside {
		return map[string]model.ImageRecord{}, false, fmt.Errorf("image records %s are corrupt (%v): starting fresh in memory", path, derr), nil
	}
	if derr != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", path, now.Unix())
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, false, nil, fmt.Errorf("move corrupt image records aside: %w", rerr)
		}
		return map[string]model.ImageRecord{}, false, fmt.Errorf("image records %s are corrupt (%v): moved to %s, starting fresh", path, derr, aside), nil
	}
	recs = make(map[string]model.ImageRecord, len(doc.Records))
	for _, r := range doc.Records {
		recs[r.ID], _ = clampRecord(r, now)
	}
	return recs, true, nil, nil
}

// clampRecord moves a record's times that lie after now back to now, and
// reports whether it moved one. Records written while the clock ran ahead
// (a wrong NTP step, a VM restored from a later snapshot) would otherwise
// keep every image too young, and every image idle, until the clock caught
// up: a year ahead is a year without image GC.
func clampRecord(r model.ImageRecord, now time.Time) (model.ImageRecord, bool) {
	moved := false
	if r.FirstDetected.After(now) {
		r.FirstDetected, moved = now, true
	}
	if r.LastUsed != nil && r.LastUsed.After(now) {
		t := now
		r.LastUsed, moved = &t, true
	}
	return r, moved
}

// SaveRecords writes the records atomically (safefile.Write: a temp file
// in the same directory, fsync, rename, fsync of the directory). A crash at
// any point leaves either the old file or the new one, never a torn one;
// a symlink in its place is refused, never replaced.
func SaveRecords(dir string, recs map[string]model.ImageRecord, now time.Time) error {
	doc := recordsDoc{APIVersion: model.APIVersion, Kind: "ImageRecords", SavedAt: now, Records: SortedRecords(recs)}
	data, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return fmt.Errorf("encode image records: %w", err)
	}
	path := filepath.Join(dir, RecordsFile)
	if err := safefile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SortedRecords returns the records ordered by image ID.
func SortedRecords(recs map[string]model.ImageRecord) []model.ImageRecord {
	out := make([]model.ImageRecord, 0, len(recs))
	for _, r := range recs {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b model.ImageRecord) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// UpdateRecords applies one detection pass to the records, as the
// kubelet's detectImages does: a new image is first detected now, an image
// in use is last used now, and records of vanished images are dropped.
// A time after now (the clock stepped back since it was recorded) is
// clamped to now. changed reports whether an image appeared or vanished,
// started or stopped being in use, or a time was clamped.
//
// The records outlive the listing, which is often dropped at once (a
// listing that reads as the last one): a record already held keeps its
// own ID string as its key, and every image in use points at one
// last-used time, so the records pin none of the listing's memory. (An
// ID string of the listing kept as a key held on to the 8 KB span it was
// decoded in: 2,000 images pinned about 6 MB the collector could not
// return.)
//
// prevUsed is the time the previous update stamped on the images in use
// then: an image that starts or stops being in use changes the records
// too, since its last-used time then stays as it is (zero: none known,
// every image in use now counts as a change).
func UpdateRecords(recs map[string]model.ImageRecord, images []model.Image, inUse map[string]bool, now, prevUsed time.Time) (next map[string]model.ImageRecord, changed bool) {
	next = make(map[string]model.ImageRecord, len(images))
	used := now
	for _, img := range images {
		r, ok := recs[img.ID]
		if !ok {
			r = model.ImageRecord{ID: img.ID, FirstDetected: now}
			changed = true
		}
		wasInUse := ok && r.LastUsed != nil && !prevUsed.IsZero() && r.LastUsed.Equal(prevUsed)
		r, moved := clampRecord(r, now)
		changed = changed || moved || wasInUse != inUse[img.ID]
		if inUse[img.ID] {
			r.LastUsed = &used
		}
		next[r.ID] = r
	}
	return next, changed || len(next) != len(recs)
}
