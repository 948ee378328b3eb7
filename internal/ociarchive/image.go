package ociarchive

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"
)

// ImageOptions describe a single-layer image of one static binary on an
// otherwise empty, distroless-like root: no shell, no libc, no
// /etc/passwd (the binary runs as uid 0 by number).
type ImageOptions struct {
	// Binary is the static executable's path on this machine.
	Binary string
	// Path is where it sits in the image, e.g. /nodegc.
	Path string
	// Ref is the image's fully qualified reference, e.g.
	// ghcr.io/nodegc/nodegc:v1.2.0.
	Ref string
	// Entrypoint is the image's entrypoint; Cmd-less.
	Entrypoint []string
	// Arch is the GOARCH the binary was built for.
	Arch string
	// Created is the image's creation time, also every file's mtime, so
	// the same binary and options give the same digests.
	Created time.Time
	// Labels are the config's labels (org.opencontainers.image.*).
	Labels map[string]string
	// Ports are exposed ports, e.g. "1017/tcp" (documentation only).
	Ports []string
	// TempDir holds the gzip layer while the archive is written; "" is the
	// archive's directory.
	TempDir string
}

// Image is what WriteImage wrote.
type Image struct {
	Ref string
	// ID is the config's digest: the image ID CRI lists.
	ID string
	// Manifest is the manifest's digest (the image's repo digest once pushed).
	Manifest string
	// Size is manifest, config and compressed layer bytes.
	Size int64
}

// rootDirs are the image's directories besides the binary's: /tmp for
// libraries that want one, /etc and /var so the runtime's bind mounts
// (hosts, resolv.conf) and the volumes' mount points land in existing
// directories.
var rootDirs = []struct {
	name string
	mode int64
}{{"etc/", 0o755}, {"tmp/", 0o1777}, {"var/", 0o755}}

// WriteImage writes an OCI archive of one image to out.
func WriteImage(out string, o ImageOptions) (Image, error) {
	dir := o.TempDir
	if dir == "" {
		dir = filepath.Dir(out)
	}
	layer, diffID, err := writeLayer(dir, o)
	if err != nil {
		return Image{}, fmt.Errorf("image layer: %w", err)
	}
	defer os.Remove(layer.File)
	platform := &Platform{Architecture: o.Arch, OS: "linux"}
	cfg := Config{
		Created:      o.Created.UTC().Format(time.RFC3339),
		Architecture: o.Arch,
		OS:           "linux",
		Config: ExecConfig{
			User:       "0:0",
			Entrypoint: o.Entrypoint,
			Env:        []string{"PATH=/"},
			WorkingDir: "/",
			Labels:     o.Labels,
			StopSignal: "SIGTERM",
		},
		RootFS: RootFS{Type: "layers", DiffIDs: []string{diffID}},
	}
	if len(o.Ports) > 0 {
		cfg.Config.ExposedPorts = make(map[string]struct{}, len(o.Ports))
		for _, p := range o.Ports {
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	config, err := JSONBlob(MediaConfig, cfg)
	if err != nil {
		return Image{}, err
	}
	manifest, err := JSONBlob(MediaManifest, Manifest{
		SchemaVersion: 2, MediaType: MediaManifest,
		Config: config.Desc, Layers: []Descriptor{layer.Desc},
	})
	if err != nil {
		return Image{}, err
	}
	index := Index{SchemaVersion: 2, MediaType: MediaIndex, Manifests: []Descriptor{ImageDescriptor(manifest.Desc, o.Ref, platform)}}
	if err := Write(out, index, []Blob{layer, config, manifest}); err != nil {
		return Image{}, err
	}
	return Image{
		Ref:      o.Ref,
		ID:       config.Desc.Digest,
		Manifest: manifest.Desc.Digest,
		Size:     manifest.Desc.Size + config.Desc.Size + layer.Desc.Size,
	}, nil
}

// writeLayer writes the gzip layer to a temp file in dir and returns it
// with its diff ID (the digest of the uncompressed tar).
func writeLayer(dir string, o ImageOptions) (Blob, string, error) {
	f, err := os.CreateTemp(dir, ".layer-*.tar.gz")
	if err != nil {
		return Blob{}, "", err
	}
	defer f.Close()
	fail := func(err error) (Blob, string, error) {
		os.Remove(f.Name())
		return Blob{}, "", err
	}
	compressed, uncompressed := sha256.New(), sha256.New()
	cw := &CountWriter{W: io.MultiWriter(f, compressed)}
	zw, err := gzip.NewWriterLevel(cw, gzip.BestCompression)
	if err != nil {
		return fail(err)
	}
	// No name and a zero mtime in the gzip header: the layer's digest
	// depends on its contents alone.
	if err := writeRoot(io.MultiWriter(zw, uncompressed), o); err != nil {
		return fail(err)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return Blob{Desc: Descriptor{MediaType: MediaLayerTarGz, Digest: Digest(compressed), Size: cw.N}, File: f.Name()},
		Digest(uncompressed), nil
}

// writeRoot writes the layer's tar: the root directories, then the binary.
func writeRoot(w io.Writer, o ImageOptions) error {
	bin, err := os.Open(o.Binary)
	if err != nil {
		return err
	}
	defer bin.Close()
	fi, err := bin.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", o.Binary)
	}
	mtime := o.Created.UTC()
	tw := tar.NewWriter(w)
	for _, d := range rootDirs {
		if err := tw.WriteHeader(&tar.Header{Name: d.name, Mode: d.mode, Typeflag: tar.TypeDir, ModTime: mtime}); err != nil {
			return err
		}
	}
	name := path.Clean("/" + o.Path)[1:]
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: fi.Size(), Typeflag: tar.TypeReg, ModTime: mtime}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, bin, fi.Size()); err != nil {
		return err
	}
	return tw.Close()
}
