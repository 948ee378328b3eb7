package realnode

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/internal/ociarchive"
)

func TestNormalizeRef(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a bare name is a docker hub library image", "busybox", "docker.io/library/busybox"},
		{"a path without a domain is on docker hub", "nodegc/test", "docker.io/nodegc/test"},
		{"a domain with a dot is kept", "registry.k8s.io/pause", "registry.k8s.io/pause"},
		{"a domain with a port is kept", "host:5000/x", "host:5000/x"},
		{"localhost is a domain", "localhost/x", "localhost/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NormalizeRef(tc.in); got != tc.want {
				t.Errorf("NormalizeRef(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCgroupParent(t *testing.T) {
	for _, tc := range []struct{ name, qos, want, err string }{
		{"guaranteed pods sit directly under kubepods", QOSGuaranteed, "/kubepods/podU", ""},
		{"burstable pods sit under their QoS level", QOSBurstable, "/kubepods/burstable/podU", ""},
		{"best-effort pods sit under their QoS level", QOSBestEffort, "/kubepods/besteffort/podU", ""},
		{"an unknown class is an error naming it", "gold", "", `qos "gold"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CgroupParent(tc.qos, "U")
			if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("CgroupParent(%q) = %q, %v; want %q, error containing %q", tc.qos, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	const dir = "/tmp/nodegc-realnode-1"
	for _, tc := range []struct {
		name, cmdline string
		want          bool
	}{
		{"a path inside the dir", "containerd\x00--config\x00/tmp/nodegc-realnode-1/config.toml\x00", true},
		{"the dir itself as the last argument", "ctr\x00/tmp/nodegc-realnode-1", true},
		{"a flag value naming a file inside", "shim\x00-address=/tmp/nodegc-realnode-1/containerd.sock\x00", true},
		{"a sibling dir sharing the prefix", "containerd\x00--config\x00/tmp/nodegc-realnode-12/config.toml\x00", false},
		{"an unrelated process", "sleep\x001000\x00", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := references(tc.cmdline, dir); got != tc.want {
				t.Errorf("references(%q) = %v, want %v", tc.cmdline, got, tc.want)
			}
		})
	}
}

func TestShimSocket(t *testing.T) {
	sum := sha256.Sum256([]byte("/tmp/d/containerd.sock/k8s.io/abc"))
	want := "/run/containerd/s/" + hex.EncodeToString(sum[:])
	for _, tc := range []struct{ name, cmdline, want string }{
		{"a runc v2 shim hashes address, namespace and id", "/usr/bin/containerd-shim-runc-v2\x00-namespace\x00k8s.io\x00-id\x00abc\x00-address\x00/tmp/d/containerd.sock\x00", want},
		{"a shim without an id has no socket to clean", "/usr/bin/containerd-shim-runc-v2\x00-namespace\x00k8s.io\x00", ""},
		{"another program has none", "containerd\x00-id\x00abc\x00", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shimSocket(tc.cmdline); got != tc.want {
				t.Errorf("shimSocket = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b\011c`); got != "/tmp/a b\tc" {
		t.Errorf("unescapeMount = %q", got)
	}
	if got := unescapeMount(`/plain`); got != "/plain" {
		t.Errorf("unescapeMount = %q", got)
	}
}

// readArchive returns an archive's files by name.
func readArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, err := ociarchive.Files(f)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-testbin")
	if err := os.WriteFile(bin, make([]byte, 100_000), 0o755); err != nil {
		t.Fatal(err)
	}
	n := &Node{imagesDir: dir, o: Options{TestBinary: bin}}
	const size = 1 << 20
	specs := []imageSpec{{ref: "docker.io/nodegc/a:v1", size: size}, {ref: "docker.io/nodegc/b:v1", size: size}, {ref: "docker.io/nodegc/tiny:v1", size: 1}}
	path := filepath.Join(dir, "out.tar")
	imgs, err := n.writeArchive(path, specs)
	if err != nil {
		t.Fatal(err)
	}
	files := readArchive(t, path)
	blob := func(digest string) []byte {
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
		if !ok {
			t.Fatalf("blob %s missing", digest)
		}
		sum := sha256.Sum256(b)
		if "sha256:"+hex.EncodeToString(sum[:]) != digest {
			t.Fatalf("blob %s does not match its digest", digest)
		}
		return b
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", files["oci-layout"])
	}
	var idx ociarchive.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != len(specs) {
		t.Fatalf("index has %d manifests, want %d", len(idx.Manifests), len(specs))
	}
	layers := map[string]bool{}
	for i, desc := range idx.Manifests {
		spec, img := specs[i], imgs[i]
		t.Run(spec.ref, func(t *testing.T) {
			if desc.Annotations[ociarchive.AnnotationName] != spec.ref || desc.Annotations[ociarchive.AnnotationRef] != "v1" || img.Ref != spec.ref {
				t.Errorf("annotations %v, ref %q; want name %s and tag v1", desc.Annotations, img.Ref, spec.ref)
			}
			var man ociarchive.Manifest
			if err := json.Unmarshal(blob(desc.Digest), &man); err != nil {
				t.Fatal(err)
			}
			var cfg ociarchive.Config
			if err := json.Unmarshal(blob(man.Config.Digest), &cfg); err != nil {
				t.Fatal(err)
			}
			layer := blob(man.Layers[0].Digest)
			if man.Layers[0].MediaType != ociarchive.MediaLayerTar || len(man.Layers) != 1 {
				t.Errorf("layers %+v, want one uncompressed tar", man.Layers)
			}
			if cfg.RootFS.DiffIDs[0] != man.Layers[0].Digest {
				t.Errorf("diff id %s, want the uncompressed layer's digest %s", cfg.RootFS.DiffIDs[0], man.Layers[0].Digest)
			}
			if img.ID != man.Config.Digest || img.Size != desc.Size+man.Config.Size+man.Layers[0].Size {
				t.Errorf("ImageRef %+v does not match the archive", img)
			}
			if layers[man.Layers[0].Digest] {
				t.Errorf("layer %s shared with another image; padding must make each unique", man.Layers[0].Digest)
			}
			layers[man.Layers[0].Digest] = true
			want := int64(spec.size)
			if spec.size < 200_000 {
				want = 100_352 + minPadding + layerTarOverhead // binary rounded to blocks
			}
			if got := int64(len(layer)); got > want || got <= want-tarBlock {
				t.Errorf("layer is %d bytes, want within a block below %d", got, want)
			}
			tr := tar.NewReader(strings.NewReader(string(layer)))
			h, err := tr.Next()
			if err != nil || "/"+h.Name != imageBinPath || h.Mode&0o111 == 0 || h.Size != 100_000 {
				t.Errorf("first layer entry %+v (%v), want the executable test binary", h, err)
			}
			if cfg.Config.Entrypoint[0] != imageBinPath {
				t.Errorf("entrypoint %v", cfg.Config.Entrypoint)
			}
		})
	}
	refs, err := archiveRefs(path)
	if err != nil || len(refs) != len(specs) || refs[0] != specs[0].ref {
		t.Errorf("archiveRefs = %v, %v", refs, err)
	}
}
