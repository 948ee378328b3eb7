package realnode

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/ociarchive"
)

// testBinPkg is the program every built image runs.
const testBinPkg = "github.com/nodegc/nodegc/internal/realnode/cmd/nodegc-testbin"

// Paths and media types of the images BuildImage writes.
const (
	imageBinPath     = "/nodegc-testbin"
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
		var idx ociarchive.Index
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			return nil, fmt.Errorf("parse index.json: %w", err)
		}
		var refs []string
		for _, m := range idx.Manifests {
			if r := m.Annotations[ociarchive.AnnotationName]; r != "" {
				refs = append(refs, r)
			}
		}
		return refs, nil
	}
}

// writeArchive writes an OCI layout tar with one image per spec.
func (n *Node) writeArchive(path string, specs []imageSpec) ([]ImageRef, error) {
	bin, err := n.testBinary()
	if err != nil {
		return nil, err
	}
	var blobs []ociarchive.Blob
	defer func() {
		for _, b := range blobs {
			if b.File != "" {
				os.Remove(b.File)
			}
		}
	}()
	idx := ociarchive.Index{SchemaVersion: 2, MediaType: ociarchive.MediaIndex}
	imgs := make([]ImageRef, 0, len(specs))
	platform := &ociarchive.Platform{Architecture: runtime.GOARCH, OS: "linux"}
	for _, s := range specs {
		layer, err := n.writeLayer(bin, s.size)
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, layer)
		cfg := ociarchive.Config{
			Created:      "2024-01-01T00:00:00Z",
			Architecture: platform.Architecture,
			OS:           platform.OS,
			Config: ociarchive.ExecConfig{
				Entrypoint: []string{imageBinPath},
				Env:        []string{"PATH=/"},
				Labels:     map[string]string{"io.nodegc.realnode.ref": s.ref},
				StopSignal: "SIGTERM",
			},
			RootFS: ociarchive.RootFS{Type: "layers", DiffIDs: []string{layer.Desc.Digest}},
		}
		config, err := ociarchive.JSONBlob(ociarchive.MediaConfig, cfg)
		if err != nil {
			return nil, err
		}
		manifest, err := ociarchive.JSONBlob(ociarchive.MediaManifest, ociarchive.Manifest{
			SchemaVersion: 2, MediaType: ociarchive.MediaManifest,
			Config: config.Desc, Layers: []ociarchive.Descriptor{layer.Desc},
		})
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, config, manifest)
		idx.Manifests = append(idx.Manifests, ociarchive.ImageDescriptor(manifest.Desc, s.ref, platform))
		imgs = append(imgs, ImageRef{
			Ref:  s.ref,
			ID:   config.Desc.Digest,
			Size: manifest.Desc.Size + config.Desc.Size + layer.Desc.Size,
		})
	}
	if err := ociarchive.Write(path, idx, blobs); err != nil {
		return nil, err
	}
	return imgs, nil
}

// writeLayer writes an uncompressed layer tar (binary plus random padding)
// of about size bytes to a temp file, hashing it on the way.
func (n *Node) writeLayer(bin string, size int64) (ociarchive.Blob, error) {
	fi, err := os.Stat(bin)
	if err != nil {
		return ociarchive.Blob{}, fmt.Errorf("stat test binary: %w", err)
	}
	pad := size - layerTarOverhead - roundUp(fi.Size())
	pad -= pad % tarBlock
	if pad < minPadding {
		pad = minPadding
	}
	f, err := os.CreateTemp(n.imagesDir, "layer-*")
	if err != nil {
		return ociarchive.Blob{}, fmt.Errorf("create layer: %w", err)
	}
	defer f.Close()
	b := ociarchive.Blob{File: f.Name()}
	h := sha256.New()
	cw := &ociarchive.CountWriter{W: io.MultiWriter(f, h)}
	if err := writeLayerTar(cw, bin, fi.Size(), pad); err != nil {
		os.Remove(f.Name())
		return ociarchive.Blob{}, fmt.Errorf("write layer: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return ociarchive.Blob{}, fmt.Errorf("write layer: %w", err)
	}
	b.Desc = ociarchive.Descriptor{MediaType: ociarchive.MediaLayerTar, Digest: ociarchive.Digest(h), Size: cw.N}
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

func roundUp(n int64) int64 { return (n + tarBlock - 1) / tarBlock * tarBlock }
