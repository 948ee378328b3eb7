package engine

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
// returns for data exactly what decoding it whole returns: the same
// snapshot, or the same error.
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

// TestDecodeSplitIsEncodingJSON: decoding a snapshot's lists in pieces on
// every core gives what json.Unmarshal of the whole document gives, for
// nodegc's own snapshots (where the split is taken) and for documents
// built to mislead the split (where it must notice and decode whole).
func TestDecodeSplitIsEncodingJSON(t *testing.T) {
	defer func(n int) { wire.SplitPiece = n }(wire.SplitPiece)
	_, big := nodetest.BigSnapshot()
	t.Run("a big snapshot is split, and decodes as encoding/json decodes it", func(t *testing.T) {
		for _, n := range []int{1 << 20, 1000, 1} {
			wire.SplitPiece = n
			if !wire.Splits(big) {
				t.Fatalf("pieces of %d bytes: nodegc's own snapshot was not split", n)
			}
			sameAsWhole(t, "big", big)
		}
	})

	wire.SplitPiece = 1 // every `},{` cuts
	valid := compact(t, nodetest.ValidSnapshotJSON)
	if !wire.Splits(valid) {
		t.Fatal("the small valid snapshot was not split")
	}
	rng := rand.New(rand.NewPCG(22, 3))
	for range 20 {
		s := nodetest.RandomSnapshot(rng)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		sameAsWhole(t, "random snapshot", b)
	}

	// Each document is valid JSON, and each would fool a split that
	// trusted its guesses.
	misleading := map[string]string{
		"a list named twice (the second wins, merged into the first)": `"containers":[{"id":"c1","exitCode":3}],` +
			`"containers":[{"id":"c2"}]`,
		"a list named twice, in another letter case":       `"containers":[{"id":"c1","exitCode":3}],"Containers":[{"id":"c2"}]`,
		"a list named first in another case, then exactly": `"Containers": [{"id":"c1","exitCode":3}], "containers":[{"id":"c2"}]`,
		"a list's key inside an unknown field first":       `"x":{"containers":[{"id":"evil"}]},"containers":[{"id":"c2"}]`,
		"a list's key inside a string first":               `"x":"\"containers\":[{\"id\":\"evil\"},{\"id\":\"e2\"}]","containers":[{"id":"c2"},{"id":"c3"}]`,
		"a key that ends in a list's name":                 `"x\"containers":[{"id":"evil"},{"id":"e2"}],"containers":[{"id":"c2"},{"id":"c3"}]`,
		"an element separator inside a string":             `"containers":[{"id":"c1","name":"},{"},{"id":"c2","name":"a},{\"id\":\"c9\"}"}]`,
		"a list, then a key nodegc writes before it":       `"containers":[{"id":"c1"},{"id":"c2"}],"runtime":{"sandboxImages":["p"]}`,
		"a list, then the same list null":                  `"containers":[{"id":"c1"},{"id":"c2"}],"containers":null`,
		"a list, then the same list null in another case":  `"containers":[{"id":"c1"},{"id":"c2"}],"CONTAINERS":null`,
		"a list's key in an unknown field, the list null":  `"x":{"containers":[{"id":"evil"},{"id":"e2"}]},"containers":null`,
		"a list under a key that ends in its name":         `"x\"containers":[{"id":"evil"},{"id":"e2"}],"containers":null`,
		"a list under a key that ends in its name, alone":  `"x\"containers":[{"id":"evil"},{"id":"e2"}]`,
		"a list with spaces":                               `"containers": [ {"id":"c1"} , {"id":"c2"} ]`,
		"an empty list":                                    `"containers":[]`,
		"a null list":                                      `"containers":null`,
		"logs after the lists":                             `"containers":[{"id":"c1"},{"id":"c2"}],"logs":{"podLogsDir":"/var/log/pods","containerLinks":[{"path":"a"},{"path":"b"}]}`,
	}
	for name, lists := range misleading {
		doc := withLists(string(valid), lists)
		if !json.Valid([]byte(doc)) {
			t.Fatalf("%s: the test document is not JSON: %s", name, doc)
		}
		sameAsWhole(t, name, []byte(doc))
	}

	// Bad input: the error is the whole decode's, naming the same field.
	bad := map[string]string{
		"a bad element in a middle piece": `"containers":[{"id":"c1"},{"id":"c2","attempt":"x"},{"id":"c3"}]`,
		"a bad time in the last piece":    `"containers":[{"id":"c1"},{"id":"c2","createdAt":"soon"}]`,
		"a truncated list":                `"containers":[{"id":"c1"},{"id":"c2"`,
		"a list that is an object":        `"containers":{"id":"c1"}`,
	}
	for name, lists := range bad {
		doc := withLists(string(valid), lists)
		sameAsWhole(t, name, []byte(doc))
	}
}

// withLists is the compact snapshot doc with its containers replaced by
// lists, whose elements are given the fields a container needs.
func withLists(doc, lists string) string {
	from, to := strings.Index(doc, `"containers":[`), strings.Index(doc, `,"podSource":`)
	lists = strings.ReplaceAll(lists, `{"id":"`, `{"state":"CONTAINER_EXITED","createdAt":"2025-03-01T09:00:00Z","id":"`)
	return doc[:from] + lists + doc[to:]
}

// compact is the JSON document s without its spaces.
func compact(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzDecodeSplit: whatever the bytes, decoding with the lists split
// gives what decoding whole gives (the same snapshot, the same error).
func FuzzDecodeSplit(f *testing.F) {
	f.Add([]byte(nodetest.ValidSnapshotJSON))
	var b bytes.Buffer
	json.Compact(&b, []byte(nodetest.ValidSnapshotJSON))
	f.Add(b.Bytes())
	f.Add([]byte(`{"images":[{},{}],"containers":[{"id":"a"},{"id":"b"}],"podSource":{}}`))
	for seed := range uint64(4) {
		s := nodetest.RandomSnapshot(rand.New(rand.NewPCG(seed, 9)))
		j, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j)
	}
	defer func(n int) { wire.SplitPiece = n }(wire.SplitPiece)
	wire.SplitPiece = 1
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsWhole(t, "fuzz", data)
	})
}
