package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReadWholeIsReadFile: readWhole gives os.ReadFile's bytes and
// errors, for files above and below the size read on every core, and
// for what is not a regular file.
func TestReadWholeIsReadFile(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i/251)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, path := range []string{
		file("empty", 0),
		file("small", 1000),
		file("at the bound", wholeReadMin),
		file("odd size above it", 3*wholeReadMin+7),
		dir,
		filepath.Join(dir, "missing"),
		"/dev/null",
	} {
		want, wantErr := os.ReadFile(path)
		got, err := readWhole(path)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Errorf("%s: %d bytes, %v; os.ReadFile: %d bytes, %v", filepath.Base(path), len(got), err, len(want), wantErr)
		}
	}
}
