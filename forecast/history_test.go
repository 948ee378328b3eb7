package forecast

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const gib = int64(1) << 30

// reading is a reading at t0+at of a 100 GiB filesystem.
func reading(at time.Duration, available int64) Reading {
	return Reading{At: t0.Add(at), Capacity: 100 * gib, Available: available, Uptime: at + time.Hour}
}

func TestHistoryAdd(t *testing.T) {
	tests := []struct {
		name    string
		next    func(Reading) Reading
		restart string // "" keeps the history
		want    int    // readings after the add
	}{
		{"a reading 10 s later is kept", func(r Reading) Reading { r.At, r.Uptime = r.At.Add(10*time.Second), r.Uptime+10*time.Second; return r }, "", 2},
		{"a reading 9 s later is dropped", func(r Reading) Reading { r.At, r.Uptime = r.At.Add(9*time.Second), r.Uptime+9*time.Second; return r }, "", 1},
		{"a capacity change starts afresh", func(r Reading) Reading { r.At, r.Capacity = r.At.Add(time.Minute), 200*gib; return r }, "capacity changed", 1},
		{"a clock that went back starts afresh", func(r Reading) Reading { r.At = r.At.Add(-time.Hour); return r }, "clock went back", 1},
		{"a wall clock that jumped a day ahead in a minute starts afresh", func(r Reading) Reading {
			r.At, r.Uptime = r.At.Add(24*time.Hour), r.Uptime+time.Minute
			return r
		}, "wall clock jumped", 1},
		{"a day's gap across a restart (no uptime) is kept", func(r Reading) Reading { r.At, r.Uptime = r.At.Add(24*time.Hour), 0; return r }, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h History
			first := reading(0, 50*gib)
			if err := h.Add(first); err != nil {
				t.Fatal(err)
			}
			err := h.Add(tt.next(first))
			switch {
			case tt.restart == "" && err != nil:
				t.Fatalf("Add: %v, want no restart", err)
			case tt.restart != "" && (err == nil || !strings.Contains(err.Error(), tt.restart)):
				t.Fatalf("Add: %v, want %q", err, tt.restart)
			}
			if h.Len() != tt.want {
				t.Errorf("%d readings, want %d", h.Len(), tt.want)
			}
		})
	}
}

func TestHistoryRefusesNoCapacity(t *testing.T) {
	var h History
	if err := h.Add(Reading{At: t0}); err == nil || h.Len() != 0 {
		t.Fatalf("Add of capacity 0: %v, %d readings; want an error and none", err, h.Len())
	}
}

func TestHistoryDroppedReadingKeepsFreed(t *testing.T) {
	var h History
	h.Add(reading(0, 50*gib))
	r := reading(5*time.Second, 51*gib)
	r.Freed = gib
	h.Add(r)
	h.Add(reading(10*time.Second, 51*gib))
	rs := h.Readings()
	if len(rs) != 2 || rs[1].Freed != gib {
		t.Fatalf("readings %+v: want 2, the last carrying the dropped one's Freed", rs)
	}
}

// TestHistoryBounded adds two weeks of readings every 10 s and checks
// the tiers: a week kept at most, bounded in count, the last 6 hours
// whole, and every freed byte still counted in what is kept.
func TestHistoryBounded(t *testing.T) {
	var h History
	var freed, dropped int64
	const step = 10 * time.Second
	end := 14 * 24 * time.Hour
	for at := time.Duration(0); at <= end; at += step {
		r := reading(at, 50*gib)
		if at%(5*time.Minute) == 0 {
			r.Freed = 1000
			freed += 1000
			if at < end-7*24*time.Hour-10*time.Minute {
				dropped += 1000
			}
		}
		if err := h.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	h.compact()
	rs := h.Readings()
	if n := len(rs); n > 6000 {
		t.Errorf("%d readings kept, want at most 6000", n)
	}
	if age := rs[len(rs)-1].At.Sub(rs[0].At); age > 7*24*time.Hour {
		t.Errorf("oldest reading %s old, want at most a week", age)
	}
	recent := 0
	for _, r := range rs {
		if rs[len(rs)-1].At.Sub(r.At) <= 6*time.Hour {
			recent++
		}
	}
	if want := int(6*time.Hour/step) + 1; recent != want {
		t.Errorf("%d readings in the last 6 hours, want %d (every 10 s)", recent, want)
	}
	var kept int64
	for _, r := range rs {
		kept += r.Freed
	}
	if kept < freed-dropped-2000 || kept > freed {
		t.Errorf("freed bytes kept %d, want those of the last week (%d of %d)", kept, freed-dropped, freed)
	}
}
