package ociarchive

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteImage reads back an archive: every blob is named by its digest
// and has its size, the layer's diff ID is the digest of the gunzipped
// tar, the index names the image for ctr and for the OCI tools, and the
// same input gives the same bytes.
func TestWriteImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("#!not really an ELF\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := ImageOptions{
		Binary: bin, Path: "/nodegc", Ref: "ghcr.io/nodegc/nodegc:v1.2.3",
		Entrypoint: []string{"/nodegc", "agent"}, Arch: "amd64",
		Created: time.Unix(1700000000, 0), Ports: []string{"1017/tcp"},
	}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	img, err := WriteImage(a, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteImage(b, o); err != nil {
		t.Fatal(err)
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Error("two archives of the same input differ")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".layer-*")); len(left) > 0 {
		t.Errorf("temp layers left: %v", left)
	}

	files := readTar(t, bytes.NewReader(da))
	for name, data := range files {
		hexsum, ok := strings.CutPrefix(name, "blobs/sha256/")
		if !ok || hexsum == "" {
			continue
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexsum {
			t.Errorf("%s: content digest %x", name, sum)
		}
	}
	var idx Index
	decode(t, files["index.json"], &idx)
	if len(idx.Manifests) != 1 {
		t.Fatalf("index has %d manifests", len(idx.Manifests))
	}
	desc := idx.Manifests[0]
	if desc.Annotations[AnnotationName] != o.Ref || desc.Annotations[AnnotationRef] != "v1.2.3" {
		t.Errorf("annotations %v", desc.Annotations)
	}
	if desc.Digest != img.Manifest || desc.Platform == nil || desc.Platform.Architecture != "amd64" {
		t.Errorf("descriptor %+v, image %+v", desc, img)
	}
	var man Manifest
	decode(t, blobOf(t, files, desc), &man)
	var cfg Config
	decode(t, blobOf(t, files, man.Config), &cfg)
	if man.Config.Digest != img.ID {
		t.Errorf("config %s, image ID %s", man.Config.Digest, img.ID)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != "/nodegc agent" || cfg.Created != "2023-11-14T22:13:20Z" {
		t.Errorf("config %+v", cfg)
	}
	if len(man.Layers) != 1 || man.Layers[0].MediaType != MediaLayerTarGz {
		t.Fatalf("layers %+v", man.Layers)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blobOf(t, files, man.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(layer); "sha256:"+hex.EncodeToString(sum[:]) != cfg.RootFS.DiffIDs[0] {
		t.Errorf("diff ID %s, layer digest %x", cfg.RootFS.DiffIDs[0], sum)
	}
	root := readTar(t, bytes.NewReader(layer))
	if string(root["nodegc"]) != "#!not really an ELF\n" {
		t.Errorf("layer files %v", keys(root))
	}
	if _, ok := root["tmp/"]; !ok {
		t.Errorf("layer has no /tmp: %v", keys(root))
	}
}

// TestWriteImageMissingBinary is one error naming the file, and no archive.
func TestWriteImageMissingBinary(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.tar")
	_, err := WriteImage(out, ImageOptions{Binary: filepath.Join(dir, "nope"), Path: "/x", Ref: "r.io/x:1", Arch: "amd64"})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("left %d files", len(entries))
	}
}

func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files, err := Files(r)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func blobOf(t *testing.T, files map[string][]byte, d Descriptor) []byte {
	t.Helper()
	data, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	if !ok || int64(len(data)) != d.Size {
		t.Fatalf("blob %s: present %v, %d bytes, descriptor says %d", d.Digest, ok, len(data), d.Size)
	}
	return data
}

func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
