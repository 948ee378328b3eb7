package realnode

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testBinPkg is the program every built image runs.
const testBinPkg = "github.com/nodegc/nodegc/internal/realnode/cmd/nodegc-testbin"

// Paths and media types of the images BuildImage writes.
const (
	imageBinPath     = "/nodegc-testbin"
	mediaIndex       = "application/vnd.oci.image.index.v1+json"
	mediaManifest    = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig      = "application/vnd.oci.image.config.v1+json"
	mediaLayerTar    = "application/vnd.oci.image.layer.v1.tar"
	annotationName   = "io.containerd.image.name"
	annotationRef    = "org.opencontainers.image.ref.name"
	minPadding       = 4 << 10
	tarBlock         = 512
	layerTarOverhead = 4 * tarBlock // two headers and the end-of-archive blocks
)

// ImageRef is an image the harness built, as the runtime lists it.
type ImageRef struct {
	// Ref is the fully qualified reference, e.g. docker.io/nodegc/fill-0:latest.
	Ref string
	// ID is the image ID CRI reports: the digest of the image config.
	ID string
	// Size is the size CRI reports: manifest, config and layer bytes. The
	// image uses about twice that on the image filesystem once unpacked
	// (the layer blob plus its snapshot).
	Size int64
}

// imageSpec is one image to put in an archive.
type imageSpec struct {
	ref  string // fully qualified
	size int64  // wanted layer size in bytes
}

// NormalizeRef qualifies an image name as containerd's CRI plugin lists it:
// "busybox" becomes docker.io/library/busybox, "nodegc/x" docker.io/nodegc/x.
func NormalizeRef(name string) string {
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		return "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		return "docker.io/" + name
	}
	return name
}

// BuildImage writes an OCI image layout archive holding one image name:tag
// whose only layer is the static nodegc-testbin (entrypoint) plus a padding
// file of random bytes, so the layer is about size bytes (at least the binary
// plus 4 KiB) and no two images share content. It returns the archive path,
// under Dir, and the image as the runtime will list it once imported.
func (n *Node) BuildImage(name, tag string, size int64) (string, ImageRef, error) {
	ref := NormalizeRef(name) + ":" + tag
	safe := strings.NewReplacer("/", "_", ":", "_").Replace(ref)
	path := filepath.Join(n.imagesDir, safe+".tar")
	imgs, err := n.writeArchive(path, []imageSpec{{ref: ref, size: size}})
	if err != nil {
		return "", ImageRef{}, fmt.Errorf("build image %s: %w", ref, err)
	}
	return path, imgs[0], nil
}

// ImportImages builds count images of about size bytes each, named
// docker.io/nodegc/<prefix>-<i>:latest for i from 0, imports them in one ctr
// call and returns them in that order. Use a prefix once per node: importing
// a ref again moves the name to the new image and leaves the old one
// untagged.
func (n *Node) ImportImages(count int, size int64, prefix string) ([]ImageRef, error) {
	specs := make([]imageSpec, count)
	for i := range specs {
		specs[i] = imageSpec{ref: fmt.Sprintf("docker.io/nodegc/%s-%d:latest", prefix, i), size: size}
	}
	path := filepath.Join(n.imagesDir, fmt.Sprintf("%s-%d.tar", prefix, time.Now().UnixNano()))
	imgs, err := n.writeArchive(path, specs)
	if err != nil {
		return nil, fmt.Errorf("build %d images %s-*: %w", count, prefix, err)
	}
	defer os.Remove(path)
	if err := n.Import(path); err != nil {
		return nil, err
	}
	return imgs, nil
}

// Import imports an OCI archive into the k8s.io namespace with ctr, unpacked
// for the node's snapshotter, then waits until the CRI plugin lists every
// image in it (CRI learns of ctr's images through events).
func (n *Node) Import(archive string) error {
	refs, err := archiveRefs(archive)
	if err != nil {
		return fmt.Errorf("import %s: %w", archive, err)
	}
	ctr, err := n.o.Runtime.look("ctr")
	if err != nil {
		return fmt.Errorf("import %s: %w", archive, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctr, "--address", n.sock, "--namespace", "k8s.io",
		"images", "import", "--snapshotter", n.snapshotter, archive)
	cmd.Env = append(os.Environ(), "PATH="+n.o.Runtime.path())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", archive, err, lastLines(string(out), 5))
	}
	for _, ref := range refs {
		if err := n.waitImage(ctx, ref); err != nil {
			return fmt.Errorf("import %s: %w", archive, err)
		}
	}
	return nil
}

// waitImage polls CRI ImageStatus until the image is listed.
func (n *Node) waitImage(ctx context.Context, ref string) error {
	for {
		resp, err := n.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err == nil && resp.GetImage() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("image %s not listed by CRI after import (last error: %v)", ref, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// archiveRefs reads the image names from an archive's index.json.
func archiveRefs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("no index.json in %s", path)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if h.Name != "index.json" {
			continue
		}
		var idx ociIndex
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			return nil, fmt.Errorf("parse index.json: %w", err)
		}
		var refs []string
		for _, m := range idx.Manifests {
			if r := m.Annotations[annotationName]; r != "" {
				refs = append(refs, r)
			}
		}
		return refs, nil
	}
}

// OCI image layout documents, with only the fields the harness writes.
type (
	ociDescriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Platform    *ociPlatform      `json:"platform,omitempty"`
	}
	ociPlatform struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}
	ociIndex struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Manifests     []ociDescriptor `json:"manifests"`
	}
	ociManifest struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Config        ociDescriptor   `json:"config"`
		Layers        []ociDescriptor `json:"layers"`
	}
	ociConfig struct {
		Created      string        `json:"created"`
		Architecture string        `json:"architecture"`
		OS           string        `json:"os"`
		Config       ociExecConfig `json:"config"`
		RootFS       struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	ociExecConfig struct {
		Entrypoint []string          `json:"Entrypoint"`
		Env        []string          `json:"Env"`
		Labels     map[string]string `json:"Labels"`
		StopSignal string            `json:"StopSignal"`
	}
)

// blob is a content-addressed file of the layout: in memory, or a temp file.
type blob struct {
	desc ociDescriptor
	data []byte
	file string
}

// writeArchive writes an OCI layout tar with one image per spec.
func (n *Node) writeArchive(path string, specs []imageSpec) ([]ImageRef, error) {
	bin, err := n.testBinary()
	if err != nil {
		return nil, err
	}
	var blobs []blob
	defer func() {
		for _, b := range blobs {
			if b.file != "" {
				os.Remove(b.file)
			}
		}
	}()
	idx := ociIndex{SchemaVersion: 2, MediaType: mediaIndex}
	imgs := make([]ImageRef, 0, len(specs))
	platform := &ociPlatform{Architecture: runtime.GOARCH, OS: "linux"}
	for _, s := range specs {
		layer, err := n.writeLayer(bin, s.size)
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, layer)
		var cfg ociConfig
		cfg.Created = "2024-01-01T00:00:00Z"
		cfg.Architecture, cfg.OS = platform.Architecture, platform.OS
		cfg.Config = ociExecConfig{
			Entrypoint: []string{imageBinPath},
			Env:        []string{"PATH=/"},
			Labels:     map[string]string{"io.nodegc.realnode.ref": s.ref},
			StopSignal: "SIGTERM",
		}
		cfg.RootFS.Type = "layers"
		cfg.RootFS.DiffIDs = []string{layer.desc.Digest}
		config, err := jsonBlob(mediaConfig, cfg)
		if err != nil {
			return nil, err
		}
		manifest, err := jsonBlob(mediaManifest, ociManifest{
			SchemaVersion: 2, MediaType: mediaManifest,
			Config: config.desc, Layers: []ociDescriptor{layer.desc},
		})
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, config, manifest)
		desc := manifest.desc
		_, tag, _ := strings.Cut(s.ref[strings.LastIndex(s.ref, "/")+1:], ":")
		desc.Annotations = map[string]string{annotationName: s.ref, annotationRef: tag}
		desc.Platform = platform
		idx.Manifests = append(idx.Manifests, desc)
		imgs = append(imgs, ImageRef{
			Ref:  s.ref,
			ID:   config.desc.Digest,
			Size: manifest.desc.Size + config.desc.Size + layer.desc.Size,
		})
	}
	index, err := json.Marshal(idx)
	if err != nil {
		return nil, fmt.Errorf("encode index.json: %w", err)
	}

	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create archive: %w", err)
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return nil, fmt.Errorf("write archive: %w", err)
	}
	if err := add("index.json", index); err != nil {
		return nil, fmt.Errorf("write archive: %w", err)
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			return nil, fmt.Errorf("write archive: %w", err)
		}
	}
	for _, b := range blobs {
		name := "blobs/sha256/" + strings.TrimPrefix(b.desc.Digest, "sha256:")
		if b.file == "" {
			if err := add(name, b.data); err != nil {
				return nil, fmt.Errorf("write archive: %w", err)
			}
			continue
		}
		if err := copyFileInto(tw, name, b.file, b.desc.Size); err != nil {
			return nil, fmt.Errorf("write archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("write archive: %w", err)
	}
	if err := out.Close(); err != nil {
		return nil, fmt.Errorf("write archive: %w", err)
	}
	return imgs, nil
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
	_, err = io.Copy(tw, f)
	return err
}

func jsonBlob(mediaType string, v any) (blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return blob{}, fmt.Errorf("encode %s: %w", mediaType, err)
	}
	sum := sha256.Sum256(data)
	return blob{
		desc: ociDescriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))},
		data: data,
	}, nil
}

// writeLayer writes an uncompressed layer tar (binary plus random padding)
// of about size bytes to a temp file, hashing it on the way.
func (n *Node) writeLayer(bin string, size int64) (blob, error) {
	fi, err := os.Stat(bin)
	if err != nil {
		return blob{}, fmt.Errorf("stat test binary: %w", err)
	}
	pad := size - layerTarOverhead - roundUp(fi.Size())
	pad -= pad % tarBlock
	if pad < minPadding {
		pad = minPadding
	}
	f, err := os.CreateTemp(n.imagesDir, "layer-*")
	if err != nil {
		return blob{}, fmt.Errorf("create layer: %w", err)
	}
	defer f.Close()
	b := blob{file: f.Name()}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	if err := writeLayerTar(cw, bin, fi.Size(), pad); err != nil {
		os.Remove(f.Name())
		return blob{}, fmt.Errorf("write layer: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return blob{}, fmt.Errorf("write layer: %w", err)
	}
	b.desc = ociDescriptor{MediaType: mediaLayerTar, Digest: digestOf(h), Size: cw.n}
	return b, nil
}

func writeLayerTar(w io.Writer, bin string, binSize, pad int64) error {
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	mtime := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(imageBinPath, "/"), Mode: 0o755, Size: binSize, Typeflag: tar.TypeReg, ModTime: mtime}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, src, binSize); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "nodegc-padding", Mode: 0o644, Size: pad, Typeflag: tar.TypeReg, ModTime: mtime}); err != nil {
		return err
	}
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, mrand.NewChaCha8(seed), pad); err != nil {
		return err
	}
	return tw.Close()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func digestOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

func roundUp(n int64) int64 { return (n + tarBlock - 1) / tarBlock * tarBlock }
