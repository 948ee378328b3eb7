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
	head := `{"apiVersion":"nodegc/v1","kind":"ImageFsHistory","readings":`
	tests := []struct{ name, data, want string }{
		{"not JSON", `{"kind":`, "unexpected end"},
		{"another kind", `{"kind":"ImageRecords","readings":[]}`, "kind"},
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
