package forecast

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// FileName is the history's file in the state dir.
const FileName = "imagefs-history.json"

// kind is the history file's kind.
const kind = "ImageFsHistory"

// fileDoc is the history file: one row per reading, [unix seconds,
// capacity, available, reclaimable, freed], so that a week of readings
// stays small.
type fileDoc struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	SavedAt    time.Time `json:"savedAt"`
	Columns    []string  `json:"columns"`
	Readings   [][]int64 `json:"readings"`
}

// columns name fileDoc's row fields, for a person reading the file.
var columns = []string{"unixSeconds", "capacityBytes", "availableBytes", "reclaimableBytes", "freedBytes"}

// Encode returns the history's file, saved at now.
func Encode(h *History, now time.Time) ([]byte, error) {
	doc := fileDoc{APIVersion: "nodegc/v1", Kind: kind, SavedAt: now, Columns: columns, Readings: make([][]int64, len(h.readings))}
	for i, r := range h.readings {
		doc.Readings[i] = []int64{r.At.Unix(), r.Capacity, r.Available, r.Reclaimable, r.Freed}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode image fs history: %w", err)
	}
	return data, nil
}

// Decode reads a history file. An error names what is wrong: the file is
// then corrupt, and the caller moves it aside and starts afresh. Rows are
// read by the file's own columns, so a later nodegc's file with more of
// them still reads (its extra columns are ignored), and one without a
// column this one needs is refused. Readings must be in time order, one
// capacity throughout (a capacity change starts a fresh history), none
// negative.
func Decode(data []byte) ([]Reading, error) {
	var doc fileDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != kind {
		return nil, fmt.Errorf("kind %q, want %s", doc.Kind, kind)
	}
	idx, err := columnIndexes(doc.Columns)
	if err != nil {
		return nil, err
	}
	out := make([]Reading, 0, len(doc.Readings))
	for i, row := range doc.Readings {
		if len(row) != len(doc.Columns) {
			return nil, fmt.Errorf("readings[%d]: %d fields, want %d", i, len(row), len(doc.Columns))
		}
		r := Reading{At: time.Unix(row[idx[0]], 0), Capacity: row[idx[1]], Available: row[idx[2]], Reclaimable: row[idx[3]], Freed: row[idx[4]]}
		if err := checkRow(r, out); err != nil {
			return nil, fmt.Errorf("readings[%d]: %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// columnIndexes returns where each of columns is in a file's columns.
func columnIndexes(have []string) ([]int, error) {
	idx := make([]int, len(columns))
	for i, c := range columns {
		idx[i] = slices.Index(have, c)
		if idx[i] < 0 {
			return nil, fmt.Errorf("columns: no %s", c)
		}
	}
	return idx, nil
}

// checkRow reports what makes r impossible after the readings before it.
func checkRow(r Reading, before []Reading) error {
	switch {
	case r.Capacity <= 0:
		return fmt.Errorf("capacity %d", r.Capacity)
	case r.Available < 0 || r.Reclaimable < 0 || r.Freed < 0:
		return fmt.Errorf("a negative byte count")
	}
	if n := len(before); n > 0 {
		last := before[n-1]
		if !r.At.After(last.At) {
			return fmt.Errorf("time %d not after the previous reading's", r.At.Unix())
		}
		if r.Capacity != last.Capacity {
			return fmt.Errorf("capacity %d differs from the previous reading's %d", r.Capacity, last.Capacity)
		}
	}
	return nil
}
