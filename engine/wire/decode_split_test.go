package wire_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/wire"
)

// sameAsWhole checks that DecodeSnapshot, which splits the long lists,
// returns for data exactly what decoding it whole returns (one
// json.Unmarshal into the typed structs): the same snapshot, or the same
// error.
func sameAsWhole(t *testing.T, name string, data []byte) {
	t.Helper()
	want, wantErr := wire.DecodeSnapshotSplit(data, false)
	got, err := wire.DecodeSnapshotSplit(data, true)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%s: error %v, decoded whole %v", name, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the split decode differs from the whole one", name)
	}
}

// layouts re-write a valid JSON document as tools print it: each must be
// split as nodegc's own compact layout is.
var layouts = []struct {
	name   string
	format func([]byte) []byte
}{
	{"compact", func(b []byte) []byte { return reformat(b, ",", ":") }},
	{"python json.dump", func(b []byte) []byte { return reformat(b, ", ", ": ") }},
	{"spaces around every token", func(b []byte) []byte { return append(append([]byte(" \n"), reformat(b, " , ", " : ")...), " \t\n"...) }},
	{"indented", func(b []byte) []byte { return indent(b, "  ") }},
	{"indented with tabs", func(b []byte) []byte { return indent(b, "\t") }},
	{"indented with CRLF", func(b []byte) []byte { return bytes.ReplaceAll(indent(b, "  "), []byte("\n"), []byte("\r\n")) }},
}

// reformat is the valid JSON document b with no whitespace but comma and
// colon after each comma and colon between tokens (Python's json.dump
// writes ", " and ": "). Strings are copied as they are, escapes kept.
func reformat(b []byte, comma, colon string) []byte {
	var out []byte
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r':
		case ',':
			out = append(out, comma...)
		case ':':
			out = append(out, colon...)
		case '"':
			j := i + 1
			for b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, b[i:j+1]...)
			i = j
		default:
			out = append(out, c)
		}
	}
	return out
}

// indent is b indented as `jq .` or json.dump(indent=…) print it.
func indent(b []byte, in string) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", in); err != nil {
		panic(err)
	}
	return out.Bytes()
}

// TestDecodeSplitAnyLayout: a snapshot is split whatever its whitespace
// (compact, Python's json.dump, indented, tabs, CRLF), and decodes as
// encoding/json decodes it whole.
func TestDecodeSplitAnyLayout(t *testing.T) {
	defer func(n int) { wire.SplitPiece = n }(wire.SplitPiece)
	rng := rand.New(rand.NewPCG(42, 1))
	wire.SplitPiece = 1 // every comma between elements cuts
	for range 10 {
		b, err := json.Marshal(nodetest.RandomSnapshot(rng))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range layouts {
			sameAsWhole(t, "random, "+l.name, l.format(b))
		}
	}
	_, big := nodetest.BigSnapshot()
	for _, doc := range []struct {
		name  string
		data  []byte
		piece int
	}{{"valid", []byte(nodetest.ValidSnapshotJSON), 1}, {"big", big, 1 << 16}} {
		wire.SplitPiece = doc.piece
		for _, l := range layouts {
			d := l.format(doc.data)
			if !wire.Splits(d) {
				t.Fatalf("%s, %s: not split", doc.name, l.name)
			}
			sameAsWhole(t, doc.name+", "+l.name, d)
		}
	}
}

// TestDecodeSplitMisleading: documents whose bytes would mislead a split
// that did not tokenize, or that are not JSON only where the split cuts,
// decode as one json.Unmarshal decodes them: the same result, the same
// error.
func TestDecodeSplitMisleading(t *testing.T) {
	defer func(n int) { wire.SplitPiece = n }(wire.SplitPiece)
	wire.SplitPiece = 1
	valid := reformat([]byte(nodetest.ValidSnapshotJSON), ",", ":")
	docs := map[string]string{
		"element separators inside strings":     `"containers": [{"id":"c1","name":"}, {"}, {"id":"c2","name":"a},{\"id\":\"c9\"}, {"}]`,
		"escaped quotes and backslashes":        `"containers": [{"id":"c1\\","name":"\"],\"x\":["}, {"id":"c2\\\\\"","name":"\\\\"}]`,
		"a list's key escaped":                  `"cont\u0061iners": [{"id":"c1"}, {"id":"c2"}]`,
		"a list named twice":                    `"containers": [{"id":"c1"}, {"id":"c2"}], "containers" : [{"id":"c3"}]`,
		"a list named twice, in another case":   `"containers": [{"id":"c1"}, {"id":"c2"}], "CONTAINERS":null`,
		"a list's key inside a nested object":   `"x": {"containers": [{"id":"evil"}, {"id":"e2"}]}, "containers": [{"id":"c2"}, {"id":"c3"}]`,
		"a list's key as a value":               `"x": "containers", "containers": [{"id":"c2"}, {"id":"c3"}]`,
		"nested arrays in elements":             `"containers": [{"id":"c1","labels":{"a":"[,]"},"x":[[1,2],{"y":[3]}]}, {"id":"c2"}]`,
		"a trailing comma":                      `"containers": [{"id":"c1"}, {"id":"c2"}, ]`,
		"a leading comma":                       `"containers": [ , {"id":"c1"}, {"id":"c2"}]`,
		"two commas":                            `"containers": [{"id":"c1"}, , {"id":"c2"}]`,
		"a list closed by a brace":              `"containers": [{"id":"c1"}, {"id":"c2"}}`,
		"an element closed by a bracket":        `"containers": [{"id":"c1"], {"id":"c2"}]`,
		"an unterminated string":                `"containers": [{"id":"c1"}, {"id":"c2}]`,
		"a bad element in a middle piece":       `"containers": [{"id":"c1"}, {"id":"c2","attempt":"x"}, {"id":"c3"}]`,
		"a bad time in the last piece":          `"containers": [{"id":"c1"}, {"id":"c2","createdAt":"soon"}]`,
		"a truncated list":                      `"containers": [{"id":"c1"}, {"id":"c2"`,
		"a list that is an object":              `"containers": {"id":"c1"}`,
		"elements that are not objects":         `"containers": [1, "a", null]`,
		"null elements":                         `"containers": [null, {"id":"c1"}, null]`,
		"an empty list with spaces":             `"containers": [ ]`,
		"whitespace JSON does not allow":        "\"containers\": [{\"id\":\"c1\"},\f{\"id\":\"c2\"}]",
		"a control character in a string":       "\"containers\": [{\"id\":\"c1\"}, {\"id\":\"c\x012\"}]",
		"invalid UTF-8 in a string":             "\"containers\": [{\"id\":\"c1\xff\"}, {\"id\":\"c2\"}]",
		"a list, then garbage after the object": `"containers": [{"id":"c1"}, {"id":"c2"}]}x{`,
	}
	// These are valid, name each list once, and must be split: the
	// tokenizer reads their strings and nesting right.
	split := []string{"element separators inside strings", "escaped quotes and backslashes",
		"a list's key inside a nested object", "a list's key as a value", "nested arrays in elements",
		"an empty list with spaces"}
	for _, name := range split {
		if d := withLists(string(valid), docs[name]); !json.Valid([]byte(d)) || !wire.Splits([]byte(d)) {
			t.Errorf("%s: not split", name)
		}
	}
	for name, lists := range docs {
		sameAsWhole(t, name, []byte(withLists(string(valid), lists)))
	}
}

// withLists is the compact snapshot doc with its containers replaced by
// lists, whose elements are given the fields a container needs.
func withLists(doc, lists string) string {
	from, to := strings.Index(doc, `"containers":[`), strings.Index(doc, `,"podSource":`)
	lists = strings.ReplaceAll(lists, `{"id":"`, `{"state":"CONTAINER_EXITED","createdAt":"2025-03-01T09:00:00Z","id":"`)
	return doc[:from] + lists + doc[to:]
}

// FuzzDecodeSplitLayouts: whatever the bytes, and whatever the layout of
// a valid document, decoding with the lists split gives what decoding
// whole gives (the same snapshot, the same error). The seed corpus is in
// testdata/fuzz/FuzzDecodeSplitLayouts, besides the seeds added here.
func FuzzDecodeSplitLayouts(f *testing.F) {
	f.Add([]byte(nodetest.ValidSnapshotJSON), uint8(0))
	for seed := range uint64(4) {
		j, err := json.Marshal(nodetest.RandomSnapshot(rand.New(rand.NewPCG(seed, 9))))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j, uint8(seed))
	}
	defer func(n int) { wire.SplitPiece = n }(wire.SplitPiece)
	wire.SplitPiece = 1
	f.Fuzz(func(t *testing.T, data []byte, layout uint8) {
		sameAsWhole(t, "as fuzzed", data)
		if json.Valid(data) {
			l := layouts[int(layout)%len(layouts)]
			sameAsWhole(t, l.name, l.format(data))
		}
	})
}
