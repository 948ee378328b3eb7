// Package ociarchive writes OCI image layouts as tar archives (an "OCI
// archive"), the form `ctr images import`, skopeo (oci-archive:) and
// registries' push tools accept: oci-layout, index.json and the
// content-addressed blobs/sha256/<hex>. It writes what nodegc's images need
// and nothing else: no registry client, no Docker daemon.
package ociarchive

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
)

// Media types and annotations of the documents an archive holds.
const (
	MediaIndex       = "application/vnd.oci.image.index.v1+json"
	MediaManifest    = "application/vnd.oci.image.manifest.v1+json"
	MediaConfig      = "application/vnd.oci.image.config.v1+json"
	MediaLayerTar    = "application/vnd.oci.image.layer.v1.tar"
	MediaLayerTarGz  = "application/vnd.oci.image.layer.v1.tar+gzip"
	AnnotationName   = "io.containerd.image.name"          // the full reference, as ctr names the image
	AnnotationRef    = "org.opencontainers.image.ref.name" // the tag, as skopeo's oci-archive:FILE:TAG finds it
	AnnotationSource = "org.opencontainers.image.source"
)

// OCI image layout documents, with only the fields nodegc writes.
type (
	Descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Platform    *Platform         `json:"platform,omitempty"`
	}
	Platform struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}
	Index struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []Descriptor `json:"manifests"`
	}
	Manifest struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Config        Descriptor        `json:"config"`
		Layers        []Descriptor      `json:"layers"`
		Annotations   map[string]string `json:"annotations,omitempty"`
	}
	Config struct {
		Created      string     `json:"created"`
		Architecture string     `json:"architecture"`
		OS           string     `json:"os"`
		Config       ExecConfig `json:"config"`
		RootFS       RootFS     `json:"rootfs"`
	}
	ExecConfig struct {
		User         string              `json:"User,omitempty"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
		Entrypoint   []string            `json:"Entrypoint"`
		Env          []string            `json:"Env"`
		WorkingDir   string              `json:"WorkingDir,omitempty"`
		Labels       map[string]string   `json:"Labels"`
		StopSignal   string              `json:"StopSignal"`
	}
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	}
)

// Blob is a content-addressed file of the layout: Data in memory, or the
// contents of File.
type Blob struct {
	Desc Descriptor
	Data []byte
	File string
}

// JSONBlob encodes v as a blob of mediaType.
func JSONBlob(mediaType string, v any) (Blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return Blob{}, fmt.Errorf("encode %s: %w", mediaType, err)
	}
	sum := sha256.Sum256(data)
	return Blob{
		Desc: Descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))},
		Data: data,
	}, nil
}

// ImageDescriptor is a manifest's descriptor for index.json: named ref
// (fully qualified, e.g. ghcr.io/nodegc/nodegc:v1) for ctr, and by its tag
// for the OCI tools.
func ImageDescriptor(manifest Descriptor, ref string, platform *Platform) Descriptor {
	_, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	manifest.Annotations = map[string]string{AnnotationName: ref, AnnotationRef: tag}
	manifest.Platform = platform
	return manifest
}

// Write writes the archive to path: oci-layout, index.json, then every blob
// under blobs/sha256. A blob listed twice is written once.
func Write(path string, index Index, blobs []Blob) error {
	data, err := json.Marshal(index)
	if err != nil {
		return fmt.Errorf("encode index.json: %w", err)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create archive: %w", err)
	}
	defer out.Close()
	if err := write(out, data, blobs); err != nil {
		return fmt.Errorf("write archive %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write archive %s: %w", path, err)
	}
	return nil
}

func write(w io.Writer, index []byte, blobs []Blob) error {
	tw := tar.NewWriter(w)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := add("index.json", index); err != nil {
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	seen := make(map[string]bool, len(blobs))
	for _, b := range blobs {
		if seen[b.Desc.Digest] {
			continue
		}
		seen[b.Desc.Digest] = true
		name := "blobs/sha256/" + strings.TrimPrefix(b.Desc.Digest, "sha256:")
		if b.File == "" {
			if err := add(name, b.Data); err != nil {
				return err
			}
			continue
		}
		if err := copyFileInto(tw, name, b.File, b.Desc.Size); err != nil {
			return err
		}
	}
	return tw.Close()
}

func copyFileInto(tw *tar.Writer, name, file string, size int64) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, f, size)
	return err
}

// CountWriter counts the bytes written through it.
type CountWriter struct {
	W io.Writer
	N int64
}

func (c *CountWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// Digest is h's sum as an OCI digest, sha256:<hex>.
func Digest(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// Files reads a tar stream (an archive, or an uncompressed layer) into its
// regular files' and directories' contents by name: for tests and small
// archives.
func Files(r io.Reader) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = b
	}
}
