package forecast

import (
	"strings"
	"testing"
	"time"
)

func TestFileRoundTrip(t *testing.T) {
	var h History
	for i := range 5 {
		r := reading(time.Duration(i)*time.Minute, int64(50-i)*gib)
		r.Reclaimable, r.Freed = int64(i)*gib, int64(i)
		h.Add(r)
	}
	data, err := Encode(&h, t0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	want := h.Readings()
	if len(got) != len(want) {
		t.Fatalf("%d readings back, want %d", len(got), len(want))
	}
	for i := range got {
		w := want[i]
		w.Uptime = 0 // not saved
		if !got[i].At.Equal(w.At) || got[i].Capacity != w.Capacity || got[i].Available != w.Available || got[i].Reclaimable != w.Reclaimable || got[i].Freed != w.Freed {
			t.Errorf("readings[%d] = %+v, want %+v", i, got[i], w)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	head := `{"apiVersion":"nodegc/v1","kind":"ImageFsHistory","columns":["unixSeconds","capacityBytes","availableBytes","reclaimableBytes","freedBytes"],"readings":`
	tests := []struct{ name, data, want string }{
		{"not JSON", `{"kind":`, "unexpected end"},
		{"another kind", `{"kind":"ImageRecords","readings":[]}`, "kind"},
		{"a column missing", `{"kind":"ImageFsHistory","columns":["unixSeconds"],"readings":[]}`, "columns: no capacityBytes"},
		{"a row too short", head + `[[1,2,3]]}`, "readings[0]: 3 fields, want 5"},
		{"capacity zero", head + `[[1,0,0,0,0]]}`, "readings[0]: capacity 0"},
		{"negative available", head + `[[1,10,-1,0,0]]}`, "readings[0]: a negative"},
		{"time not increasing", head + `[[5,10,1,0,0],[5,10,1,0,0]]}`, "readings[1]: time 5"},
		{"capacity changing", head + `[[5,10,1,0,0],[6,11,1,0,0]]}`, "readings[1]: capacity 11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestDecodeLaterColumns: a later nodegc's file, with a column more and
// the columns in another order, reads.
func TestDecodeLaterColumns(t *testing.T) {
	data := `{"kind":"ImageFsHistory","columns":["capacityBytes","unixSeconds","inodesFree","availableBytes","freedBytes","reclaimableBytes"],"readings":[[100,7,55,40,1,20]]}`
	rs, err := Decode([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := Reading{At: time.Unix(7, 0), Capacity: 100, Available: 40, Reclaimable: 20, Freed: 1}
	if len(rs) != 1 || rs[0] != want {
		t.Fatalf("%+v, want %+v", rs, want)
	}
}

// FuzzDecode: whatever the file holds, Decode returns an error or
// readings in time order of one positive capacity.
func FuzzDecode(f *testing.F) {
	var h History
	h.Add(reading(0, gib))
	h.Add(reading(time.Minute, gib/2))
	good, _ := Encode(&h, t0)
	f.Add(good)
	f.Add([]byte(`{"kind":"ImageFsHistory","columns":[],"readings":[[]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := Decode(data)
		if err != nil {
			return
		}
		for i, r := range rs {
			if r.Capacity <= 0 || i > 0 && (!r.At.After(rs[i-1].At) || r.Capacity != rs[0].Capacity) {
				t.Fatalf("readings[%d] = %+v accepted", i, r)
			}
		}
	})
}
