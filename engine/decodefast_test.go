package engine

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sameAsEncodingJSON checks decodeFast against json.Unmarshal on data: when
// decodeFast decodes it, encoding/json must too, to the same value; when
// encoding/json refuses it, decodeFast must give up. It reports whether
// decodeFast decoded it.
func sameAsEncodingJSON(t *testing.T, data []byte) bool {
	t.Helper()
	var fast, slow wireSnapshot
	ok := decodeFast(data, &fast)
	err := json.Unmarshal(data, &slow)
	switch {
	case ok && err != nil:
		t.Fatalf("decodeFast decoded what encoding/json refuses (%v):\n%.300s", err, data)
	case ok && !reflect.DeepEqual(fast, slow):
		t.Fatalf("decodeFast and encoding/json differ on\n%.300s\nfast %+v\njson %+v", data, fast, slow)
	}
	return ok
}

// TestDecodeFastMatchesEncodingJSON: the fast decoder decodes nodegc's own
// snapshots and the values encoding/json writes (escapes, characters
// beyond ASCII, null, empty lists, times in any zone) exactly as
// encoding/json does, and gives up on anything it does not handle the
// same way.
func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	t.Run("snapshots as nodegc writes them", func(t *testing.T) {
		for seed := range uint64(50) {
			s := randomSnapshot(rand.New(rand.NewPCG(seed, 22)))
			for i := range s.Images {
				s.Images[i].RepoTags = append(s.Images[i].RepoTags, `tag "with" <html> & \ escapes`, "ünï\u2028", "bad \xff")
			}
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if !sameAsEncodingJSON(t, b) {
				t.Fatalf("seed %d: decodeFast gave up on a snapshot nodegc writes:\n%.300s", seed, b)
			}
		}
		_, big := bigSnapshot()
		if !sameAsEncodingJSON(t, big) {
			t.Fatal("decodeFast gave up on the big snapshot")
		}
	})

	doc := func(inner string) []byte {
		return []byte(`{"apiVersion":"nodegc/v1","kind":"NodeSnapshot","takenAt":"2025-03-01T12:00:00Z",` + inner + `}`)
	}
	accepted := []string{
		` "images" : [ { "id" : "a" , "repoTags" : [ ] , "repoDigests" : null , "sizeBytes" : -0 , "pinned" : true } ] `,
		"\t\n\r\"images\":[null,{\"id\":null,\"sizeBytes\":null,\"pinned\":null}]",
		`"images":[{"id":"\u0061\n\"\\\/","repoTags":["\ud83d\ude42","\ud800"]}]`,
		"\"images\":[{\"id\":\"bad \xff utf-8 \xe2\x82\",\"repoTags\":[\"ünï\"]}]", // encoding/json replaces bad bytes
		`"imageRecords":[{"id":"a","firstDetected":"2025-03-01T12:00:00.123456789+05:30","lastUsed":null}]`,
		`"imageRecords":[{"id":"a","firstDetected":null,"lastUsed":"2025-03-01T12:00:00-07:00"}]`,
		`"containers":[{"id":"c","attempt":4294967295,"exitCode":-2147483648,"finishedAt":"2025-03-01T12:00:00Z","state":"CONTAINER_EXITED"}]`,
		`"sandboxes":[{"id":"s","attempt":0,"state":"SANDBOX_READY","createdAt":"2025-03-01T12:00:00Z","configSource":"file"}]`,
		`"imageFs":{"capacityBytes":9223372036854775807,"availableBytes":-9223372036854775808},"rootFs":null,"logs":null`,
		`"imageFs":null,"rootFs":{"mountpoint":"/"},"runtime":null,"podSource":null`,
		`"logs":{"podLogsDir":"/var/log/pods","podDirs":["a_b_c"],"containerLinks":[{"path":"p","target":"t","containerId":"c","dangling":true}]}`,
		`"podSource":{"ready":false,"removablePodUIDs":[],"description":"d"},"runtime":{"sandboxImages":null}`,
	}
	for _, in := range accepted {
		if !sameAsEncodingJSON(t, doc(in)) {
			t.Errorf("decodeFast gave up on %s", in)
		}
	}
	refused := []string{
		`"futureField":1`,                       // unknown: encoding/json ignores it
		`"Images":[]`,                           // encoding/json matches keys case-insensitively
		`"images":[],"images":[]`,               // encoding/json merges a key given twice
		`"images":[{"id":"a","ID":"b"}]`,        // folded duplicate
		`"images":[{"sizeBytes":1.0}]`,          // a fraction for an integer
		`"images":[{"sizeBytes":1e3}]`,          // an exponent
		`"images":[{"sizeBytes":01}]`,           // not JSON
		`"images":[{"sizeBytes":"1"}]`,          // a string for a number
		`"images":[{"pinned":"true"}]`,          // a string for a bool
		`"images":[{"id":1}]`,                   // a number for a string
		`"images":{}`,                           // an object for a list
		`"images":[{"id":"a"},]`,                // trailing comma
		`"images":[{"id":"a",}]`,                // trailing comma
		"\"images\":[{\"id\":\"a\tb\"}]",        // a raw control character
		`"images":[{"id":"a\x"}]`,               // a bad escape
		`"containers":[{"attempt":-1}]`,         // a negative unsigned
		`"containers":[{"attempt":4294967296}]`, // overflows uint32
		`"containers":[{"exitCode":2147483648}]`,
		`"takenAt":"yesterday"`,
		`"takenAt":"2025-03-01T12:00:00\u005a"`, // time.Time reads the raw bytes
		`"imageFs":{"capacityBytes":9223372036854775808}`,
		`"podSource":{"ready":nul}`,
		`"podSource":{"ready":truex}`,
	}
	for _, in := range refused {
		if sameAsEncodingJSON(t, doc(in)) {
			t.Errorf("decodeFast decoded %s, which it cannot decode as encoding/json does", in)
		}
	}
	for _, in := range []string{``, `null`, `[]`, `{"apiVersion":"nodegc/v1"} x`, `{"apiVersion":"nodegc/v1"`, `{"apiVersion" "x"}`} {
		if sameAsEncodingJSON(t, []byte(in)) && in != `null` {
			t.Errorf("decodeFast decoded %q", in)
		}
	}
}

// FuzzDecodeFast compares decodeFast with encoding/json on arbitrary
// documents (see sameAsEncodingJSON).
//
//	go test ./engine -run '^$' -fuzz FuzzDecodeFast -fuzztime 30s
func FuzzDecodeFast(f *testing.F) {
	f.Add([]byte(validSnapshotJSON))
	f.Add([]byte(strings.Replace(validSnapshotJSON, `"futureField": {"ignored": true},`, "", 1)))
	for seed := range uint64(4) {
		b, err := json.Marshal(randomSnapshot(rand.New(rand.NewPCG(seed, 22))))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsEncodingJSON(t, data)
	})
}
