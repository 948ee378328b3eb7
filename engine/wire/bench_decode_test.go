package wire_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/engine/wire"
)

// BenchmarkDecodeLayouts decodes the big snapshot (or the file named by
// NODEGC_BENCH_SNAPSHOT) in each layout three ways: DecodeSnapshot
// (split), DecodeSnapshotSplit(…, false) (whole), and a bare
// json.Unmarshal into the typed structs, the baseline `plan --from` is
// held to. Compare split with bare within one layout: the split must not
// depend on the whitespace.
func BenchmarkDecodeLayouts(b *testing.B) {
	_, data := nodetest.BigSnapshot()
	if f := os.Getenv("NODEGC_BENCH_SNAPSHOT"); f != "" {
		var err error
		if data, err = os.ReadFile(f); err != nil {
			b.Fatal(err)
		}
	}
	for _, l := range layouts {
		if l.name == "spaces around every token" || l.name == "indented with tabs" {
			continue
		}
		d := l.format(data)
		b.Run(l.name+"/split", func(b *testing.B) {
			b.SetBytes(int64(len(d)))
			for b.Loop() {
				if _, err := wire.DecodeSnapshot(d); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(l.name+"/whole", func(b *testing.B) {
			b.SetBytes(int64(len(d)))
			for b.Loop() {
				if _, err := wire.DecodeSnapshotSplit(d, false); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(l.name+"/bare", func(b *testing.B) {
			b.SetBytes(int64(len(d)))
			for b.Loop() {
				var s model.Snapshot
				if err := json.Unmarshal(d, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
