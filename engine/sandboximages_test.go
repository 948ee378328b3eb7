package engine

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func TestSandboxImagesFile(t *testing.T) {
	images := map[string]string{"sb1": "registry.k8s.io/pause:3.9", "sb2": ""}
	t.Run("saved images load back", func(t *testing.T) {
		dir := t.TempDir()
		if err := SaveSandboxImages(dir, images); err != nil {
			t.Fatal(err)
		}
		if got := LoadSandboxImages(dir); !maps.Equal(got, images) {
			t.Errorf("loaded %v, want %v", got, images)
		}
		if fi, err := os.Stat(filepath.Join(dir, sandboxImagesFile)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("file %v, %v; want mode 0600", fi, err)
		}
	})
	t.Run("a missing state dir is not created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "none")
		if err := SaveSandboxImages(dir, images); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("state dir created: %v", err)
		}
		if got := LoadSandboxImages(dir); got != nil {
			t.Errorf("loaded %v from nothing", got)
		}
	})
	t.Run("a dir others can write is not trusted", func(t *testing.T) {
		dir := t.TempDir()
		if err := SaveSandboxImages(dir, images); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if got := LoadSandboxImages(dir); got != nil {
			t.Errorf("loaded %v from a world-writable dir", got)
		}
	})
	t.Run("a corrupt file is ignored", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, sandboxImagesFile), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := LoadSandboxImages(dir); got != nil {
			t.Errorf("loaded %v from a corrupt file", got)
		}
	})
}
