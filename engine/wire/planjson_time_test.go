package wire

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// timesToWrite are times of every kind a plan may hold: zero, UTC and
// other zones (offsets with minutes and seconds, a named zone, Local),
// with and without nanoseconds and a monotonic reading, at the edges of
// the years time.Time's MarshalJSON writes, and past them (an error), and
// offsets of 24 hours or more (an error).
func timesToWrite(r *rand.Rand) []time.Time {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("EST", -5*3600)
	}
	zones := []*time.Location{time.UTC, time.Local, ny, time.FixedZone("", 0), time.FixedZone("X", 5*3600+1800),
		time.FixedZone("", -(9*3600 + 30*60 + 15)), time.FixedZone("", 23*3600+59*60), time.FixedZone("", 24*3600), time.FixedZone("", -25*3600)}
	ts := []time.Time{{}, time.Now(), time.Unix(0, 0), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}.In(ny)}
	for range 3000 {
		t := time.Unix(r.Int64N(1<<36)-1<<35, 0)
		switch r.IntN(4) {
		case 0:
			t = t.Add(time.Duration(r.IntN(1e9)))
		case 1:
			t = t.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		case 2:
			t = t.Add(time.Duration(r.IntN(1e6)) * time.Microsecond)
		}
		ts = append(ts, t.In(zones[r.IntN(len(zones))]))
	}
	return ts
}

// TestJSONTimeIsTimeMarshalJSON: a jsonTime is written as time.Time's
// MarshalJSON writes it, and fails where it fails, over every kind of
// time; omitzero leaves out the same times.
func TestJSONTimeIsTimeMarshalJSON(t *testing.T) {
	type tm struct {
		T time.Time  `json:"t,omitzero"`
		P *time.Time `json:"p,omitempty"`
	}
	type jt struct {
		T jsonTime  `json:"t,omitzero"`
		P *jsonTime `json:"p,omitempty"`
	}
	errs := 0
	for _, v := range timesToWrite(rand.New(rand.NewPCG(43, 1))) {
		want, wantErr := v.MarshalJSON()
		got, err := json.Marshal(jsonTime(v))
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%v: jsonTime writes %s (error %v), time.Time %s (error %v)", v, got, err, want, wantErr)
		}
		if err != nil {
			errs++
			if msg := strings.TrimPrefix(wantErr.Error(), "Time.MarshalJSON: "); !strings.HasSuffix(err.Error(), msg) {
				t.Fatalf("%v: error %v, time.Time's %v", v, err, wantErr)
			}
			continue
		}
		want, _ = json.Marshal(tm{v, &v})
		if got, _ = json.Marshal(jt{jsonTime(v), (*jsonTime)(&v)}); !bytes.Equal(got, want) {
			t.Fatalf("%v: in a struct, %s; time.Time's %s", v, got, want)
		}
	}
	if errs == 0 {
		t.Fatal("no time failed: the errors were not compared")
	}
}

// TestContainerRowIsModelContainerRow: containerRow has
// model.ContainerRow's fields, in its order, with its tags, and its times
// as jsonTime; containerRowOf copies every field.
func TestContainerRowIsModelContainerRow(t *testing.T) {
	m, w := reflect.TypeFor[model.ContainerRow](), reflect.TypeFor[containerRow]()
	if m.NumField() != w.NumField() {
		t.Fatalf("model.ContainerRow has %d fields, containerRow %d", m.NumField(), w.NumField())
	}
	as := map[reflect.Type]reflect.Type{reflect.TypeFor[time.Time](): reflect.TypeFor[jsonTime](), reflect.TypeFor[*time.Time](): reflect.TypeFor[*jsonTime]()}
	for i := range m.NumField() {
		mf, wf := m.Field(i), w.Field(i)
		want := mf.Type
		if a, ok := as[want]; ok {
			want = a
		}
		if mf.Name != wf.Name || mf.Tag != wf.Tag || wf.Type != want {
			t.Fatalf("field %d: model.ContainerRow's %s %s %q, containerRow's %s %s %q", i, mf.Name, mf.Type, mf.Tag, wf.Name, wf.Type, wf.Tag)
		}
	}
	// Every field set to a value of its own: a field containerRowOf
	// leaves out is zero in the copy.
	var r model.ContainerRow
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + m.Field(i).Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Uint32:
			f.SetUint(uint64(i + 1))
		case reflect.Pointer:
			tt := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			f.Set(reflect.ValueOf(&tt))
		case reflect.Struct:
			f.Set(reflect.ValueOf(time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)))
		default:
			t.Fatalf("field %s: a kind this test does not set (%s)", m.Field(i).Name, f.Kind())
		}
	}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(containerRowOf(&r))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("containerRowOf writes %s (error %v), want %s", got, err, want)
	}
}
