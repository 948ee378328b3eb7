package state

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAStartReadsOnlyTheJournalAfterItsLastCheckpoint(t *testing.T) {
	intent := func(id string) string {
		return fmt.Sprintf(`{"op":"intent","pass":"r/1","kind":"image","id":%q,"reason":"space"}`+"\n", id)
	}
	outcome := func(id string) string {
		return fmt.Sprintf(`{"op":"removed","pass":"r/1","kind":"image","id":%q,"reason":"space"}`+"\n", id)
	}
	started := func(id string) string {
		return fmt.Sprintf(`{"op":"started","pass":"r/1","kind":"image","id":%q,"reason":""}`+"\n", id)
	}
	const checkpoint = `{"time":"2026-11-01T12:00:00Z","op":"checkpoint","pass":"","passKind":"","kind":"","id":"","reason":""}` + "\n"
	closed := strings.Repeat(intent("old")+outcome("old"), 20000)
	for _, tc := range []struct {
		name      string
		journal   string
		wantOpen  []string
		wantStart []bool
		wantTail  int
	}{
		{"an intent after the checkpoint is open, with its started line", closed + checkpoint + intent("a") + started("a"), []string{"a"}, []bool{true}, 2},
		{"a journal that ends on a checkpoint has no tail", closed + intent("x") + checkpoint, nil, nil, 0},
		{"a journal without a checkpoint (an older nodegc's) is read whole", intent("a") + intent("b") + outcome("a"), []string{"b"}, []bool{false}, 3},
		{"a checkpoint mark inside an ID is not a checkpoint", intent(`"op":"checkpoint"`) + intent("b"), []string{`"op":"checkpoint"`, "b"}, []bool{false, false}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, JournalFile), []byte(tc.journal), 0o600); err != nil {
				t.Fatal(err)
			}
			open, tail, err := readOpenIntents(dir)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			var st []bool
			for _, in := range open {
				ids, st = append(ids, in.ID), append(st, in.started)
			}
			if !slices.Equal(ids, tc.wantOpen) || !slices.Equal(st, tc.wantStart) || tail != tc.wantTail {
				t.Errorf("open %q started %v tail %d, want %q %v %d", ids, st, tail, tc.wantOpen, tc.wantStart, tc.wantTail)
			}
			if strings.HasPrefix(tc.journal, closed) {
				// Its cost is the tail's, not the 40,000 closed lines'.
				if allocs := testing.AllocsPerRun(3, func() { readOpenIntents(dir) }); allocs > 500 {
					t.Errorf("reading the tail took %.0f allocations: it must not decode the history", allocs)
				}
			}
		})
	}
}
