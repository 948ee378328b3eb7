package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodegc/nodegc/internal/safefile"

	"github.com/nodegc/nodegc/engine/state"
)

// sandboxImagesFile is the name, in the state dir, of the images that
// READY sandboxes run, by sandbox ID.
const sandboxImagesFile = "sandbox-images.json"

// sandboxImagesDoc is the on-disk form of the sandbox images.
type sandboxImagesDoc struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Images     map[string]string `json:"images"`
}

// LoadSandboxImages returns the images of sandboxes, by sandbox ID, that an
// earlier run learned and saved in the state dir dir ("" for a sandbox
// whose runtime does not say). A sandbox's image never changes, so a
// one-shot command seeded with them asks the runtime only about sandboxes
// it has not seen (issue 22: a plan costs one listing). Anything unusable
// gives nil, and the runtime is asked again: no dir, a missing or corrupt
// file, or a dir that openStateDir would refuse (whoever can write it
// could hide the image a sandbox runs).
func LoadSandboxImages(dir string) map[string]string {
	if !usableStateDir(dir) {
		return nil
	}
	data, err := state.ReadFile(dir, sandboxImagesFile)
	if err != nil {
		return nil
	}
	var doc sandboxImagesDoc
	if json.Unmarshal(data, &doc) != nil || doc.Kind != "SandboxImages" {
		return nil
	}
	return doc.Images
}

// SaveSandboxImages replaces the state dir's sandbox images with images,
// atomically. It writes only into a state dir that already exists and is
// usable, and does nothing when dir is "". Only a command that may write
// the state dir calls it: read-only commands never write there.
func SaveSandboxImages(dir string, images map[string]string) error {
	if !usableStateDir(dir) {
		return nil
	}
	data, err := json.Marshal(sandboxImagesDoc{APIVersion: APIVersion, Kind: "SandboxImages", Images: images})
	if err != nil {
		return fmt.Errorf("encode sandbox images: %w", err)
	}
	return safefile.Write(filepath.Join(dir, sandboxImagesFile), data, 0o600)
}

// usableStateDir reports whether dir exists and passes openStateDir's
// checks (a real directory, this user's, not writable by others, below
// directories no other user can change).
func usableStateDir(dir string) bool {
	if dir == "" {
		return false
	}
	fi, err := os.Lstat(dir)
	return err == nil && state.CheckInfo(fi) == nil && state.CheckParents(dir) == nil
}
