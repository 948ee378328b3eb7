package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/wire"
)

// explainedPlanJSON is the document WritePlanJSON writes, as encoding/json
// sees it (cmd/nodegc's explainedPlan).
type explainedPlanJSON struct {
	Plan
	Explanation Explanation `json:"explanation"`
}

// encodingJSON is what encoding/json's Encoder writes for the plan and
// its explanation.
func encodingJSON(p Plan, x Explanation) ([]byte, error) {
	var b bytes.Buffer
	err := json.NewEncoder(&b).Encode(explainedPlanJSON{p, x})
	return b.Bytes(), err
}

// TestWritePlanJSONMatchesEncodingJSON pins WritePlanJSON to
// encoding/json byte for byte: over plans and explanations whose every
// field, at every depth, is filled at random (nil, empty and full lists,
// nil pointers, zero times, strings that need escaping; the errors of
// times it cannot write word for word), and over a real plan of a big
// node. A field added to a plan or a row and not to the
// writer fails it.
func TestWritePlanJSONMatchesEncodingJSON(t *testing.T) {
	defer func(n int) { wire.ListPiece = n }(wire.ListPiece)
	rng := rand.New(rand.NewPCG(22, 1))
	for i := range 3000 {
		// Pieces of one, two and many elements: a list is cut at
		// every place, or not at all.
		wire.ListPiece = []int{1, 2, 256}[i%3]
		var v explainedPlanJSON
		fillRandom(rng, reflect.ValueOf(&v).Elem())
		want, wantErr := encodingJSON(v.Plan, v.Explanation)
		var got bytes.Buffer
		err := WritePlanJSON(&got, v.Plan, v.Explanation)
		if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("case %d: error %v, encoding/json's %v", i, err, wantErr)
		}
		if err == nil && !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("case %d differs from encoding/json:\n got %s\nwant %s", i, got.Bytes(), want)
		}
	}

	// A big node's plan, cut into pieces marshalled on every core and
	// written in order, against encoding/json's one serial Encode of it.
	s, _ := nodetest.BigSnapshot()
	p := PlanPass(s, nodetest.BenchPolicy(), PassFull, nodetest.T0)
	x := Explain(s, p)
	if len(p.ContainerGC.Remove) < 10*256 || len(x.Containers) < 10*256 || len(x.Images) == 0 {
		t.Fatal("the big plan removes little: the test would compare few pieces")
	}
	want, err := encodingJSON(p, x)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{256, 7} {
		wire.ListPiece = n
		for name, write := range map[string]func(*bytes.Buffer) error{
			"WritePlanJSON":          func(b *bytes.Buffer) error { return WritePlanJSON(b, p, x) },
			"WriteExplainedPlanJSON": func(b *bytes.Buffer) error { return WriteExplainedPlanJSON(b, s, p) },
		} {
			var got bytes.Buffer
			if err := write(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				i := 0
				for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
					i++
				}
				t.Fatalf("%s, pieces of %d: the big plan differs from encoding/json at byte %d: got %.200q, want %.200q", name, n, i, got.Bytes()[i:], want[i:])
			}
		}
	}
}

// TestWritePlanJSONWriteError: a failing writer's error is returned.
func TestWritePlanJSONWriteError(t *testing.T) {
	s, _ := nodetest.BigSnapshot()
	p := PlanPass(s, nodetest.BenchPolicy(), PassFull, nodetest.T0)
	boom := errors.New("disk full")
	if err := WritePlanJSON(brokenWriter{boom}, p, Explain(s, p)); !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
}

// brokenWriter fails every write.
type brokenWriter struct{ err error }

func (w brokenWriter) Write([]byte) (int, error) { return 0, w.err }

var _ io.Writer = brokenWriter{}

// randomStrings are the strings fillRandom picks from: plain ones and
// every kind encoding/json escapes.
var randomStrings = []string{
	"", "a", "sha256:0123abcd", "registry.example.com/team/app:v1", "ns/pod-1/c0",
	`quote " and \ backslash`, "<script>&amp;</script>", "tab\tnew\nline\r", "\x00\x01\x1f",
	"ünïcödé", "line\u2028sep\u2029", "bad \xff utf-8", "\x7f", "emoji 🙂",
}

// fillRandom sets every settable field under v to a random value.
func fillRandom(rng *rand.Rand, v reflect.Value) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		var tm time.Time
		switch rng.IntN(6) {
		case 0: // zero
		case 1:
			tm = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
		case 2:
			tm = time.Date(2025, 12, 31, 23, 59, 59, 123456789, time.FixedZone("X", 5*3600+1800))
		case 3:
			tm = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()
		case 4:
			tm = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("", -7*3600))
		case 5:
			if rng.IntN(20) == 0 {
				tm = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // not writable: an error
			}
		}
		v.Set(reflect.ValueOf(tm))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fillRandom(rng, f)
			}
		}
	case reflect.Pointer:
		if rng.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fillRandom(rng, v.Elem())
		}
	case reflect.Slice:
		switch n := rng.IntN(5); n {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			v.Set(reflect.MakeSlice(v.Type(), n-1, n-1))
			for i := range n - 1 {
				fillRandom(rng, v.Index(i))
			}
		}
	case reflect.Map:
		if rng.IntN(2) == 0 {
			v.Set(reflect.MakeMap(v.Type()))
			for range rng.IntN(3) {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				fillRandom(rng, k)
				fillRandom(rng, e)
				v.SetMapIndex(k, e)
			}
		}
	case reflect.String:
		v.SetString(randomStrings[rng.IntN(len(randomStrings))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if rng.IntN(3) > 0 {
			v.SetInt(rng.Int64N(1<<40) - 1<<39)
			if v.OverflowInt(v.Int()) {
				v.SetInt(int64(rng.IntN(100)) - 50)
			}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rng.IntN(3) > 0 {
			v.SetUint(uint64(rng.IntN(1 << 16)))
		}
	}
}

// TestPlanExplainedWritesEncodingJSON: the big node's plan as `plan
// --from -o json` writes it (PlanExplained, its explanation made while
// the plan is written by WritePlanJSONWith) is encoding/json's Encode of
// PlanPass's plan and Explain's explanation, byte for byte.
func TestPlanExplainedWritesEncodingJSON(t *testing.T) {
	s, _ := nodetest.BigSnapshot()
	plan := PlanPass(s, nodetest.BenchPolicy(), PassFull, nodetest.T0)
	want, err := encodingJSON(plan, Explain(s, plan))
	if err != nil {
		t.Fatal(err)
	}
	p, explain := PlanExplained(s, nodetest.BenchPolicy(), PassFull, nodetest.T0)
	var got bytes.Buffer
	if err := WritePlanJSONWith(&got, p, explain); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("the big plan written as it is explained differs from encoding/json's (%d bytes against %d)", got.Len(), len(want))
	}
}
