package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

// TestSnapshotWritesArraysNotNull checks that nodegc snapshot writes []
// wherever the NodeSnapshot contract says an array, even when the runtime
// sent nothing for it.
func TestSnapshotWritesArraysNotNull(t *testing.T) {
	tests := []struct {
		name string
		node simnode.Options
		// check looks at the decoded document.
		check func(t *testing.T, doc snapshotDoc)
	}{
		{"an image without tags has repoTags [] and the document has no null", simnode.Options{Seed: 7, Images: 60},
			func(t *testing.T, doc snapshotDoc) {
				for _, im := range doc.Images {
					if string(im.RepoTags) == "[]" {
						return
					}
				}
				t.Fatal("the fixture node has no image without tags; pick another seed")
			}},
		{"an idle node has empty sandboxes, containers and removablePodUIDs, not null", simnode.Options{Seed: 1},
			func(t *testing.T, doc snapshotDoc) {
				for name, raw := range map[string]json.RawMessage{
					"sandboxes": doc.Sandboxes, "containers": doc.Containers, "podSource.removablePodUIDs": doc.PodSource.RemovablePodUIDs,
				} {
					if string(raw) != "[]" {
						t.Errorf("%s = %s, want []", name, raw)
					}
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ep := startSimnode(t, tt.node)
			c := newCLI("")
			if code := c.run("snapshot", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir()); code != 0 {
				t.Fatalf("exit %d: %s", code, c.err.String())
			}
			out := c.out.String()
			if i := strings.Index(out, "null"); i >= 0 {
				t.Errorf("the snapshot has a null: …%s…", out[max(i-120, 0):min(i+10, len(out))])
			}
			var doc snapshotDoc
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			tt.check(t, doc)
		})
	}
}

// snapshotDoc is the raw shape of the lists of a NodeSnapshot document.
type snapshotDoc struct {
	Images []struct {
		RepoTags    json.RawMessage `json:"repoTags"`
		RepoDigests json.RawMessage `json:"repoDigests"`
	} `json:"images"`
	Sandboxes  json.RawMessage `json:"sandboxes"`
	Containers json.RawMessage `json:"containers"`
	PodSource  struct {
		RemovablePodUIDs json.RawMessage `json:"removablePodUIDs"`
	} `json:"podSource"`
}

func TestWithEmptyLists(t *testing.T) {
	t.Run("every nil list of the contract becomes empty", func(t *testing.T) {
		s := withEmptyLists(engine.Snapshot{
			Images: []engine.Image{{ID: "a"}},
			Logs:   &engine.LogFiles{PodLogsDir: "/var/log/pods"},
		})
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := string(data)
		for _, want := range []string{`"repoTags":[]`, `"repoDigests":[]`, `"imageRecords":[]`, `"sandboxes":[]`,
			`"containers":[]`, `"removablePodUIDs":[]`, `"podDirs":[]`, `"containerLinks":[]`} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %s", got, want)
			}
		}
		if strings.Contains(got, "null") {
			t.Errorf("%s has a null", got)
		}
	})
	t.Run("the input's images and logs are not modified", func(t *testing.T) {
		in := engine.Snapshot{Images: []engine.Image{{ID: "a"}}, Logs: &engine.LogFiles{}}
		withEmptyLists(in)
		if in.Images[0].RepoTags != nil || in.Logs.PodDirs != nil {
			t.Errorf("the input was modified: %+v %+v", in.Images[0], *in.Logs)
		}
	})
}

// TestSnapshotOutput checks that -o writes to what the operator named: a
// symlink is refused before the runtime is asked (exit 2), a device is
// written in place, a regular file is replaced.
func TestSnapshotOutput(t *testing.T) {
	tests := []struct {
		name string
		// make creates what -o names and returns it.
		make     func(t *testing.T, dir string) string
		wantCode int
		// wantType is the file type -o names afterwards.
		wantType fs.FileMode
		// wantErr is in the one stderr line, for a refusal.
		wantErr string
	}{
		{
			name:     "a regular file is replaced by the document",
			make:     func(t *testing.T, dir string) string { return writeFile(t, "old.json", "old") },
			wantType: 0,
		},
		{
			name: "a symlink is refused with exit 2, before the runtime is asked, and left as it is",
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "link.json")
				if err := os.WriteFile(filepath.Join(dir, "target.json"), []byte("keep"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("target.json", p); err != nil {
					t.Fatal(err)
				}
				return p
			},
			wantCode: 2,
			wantType: fs.ModeSymlink,
			wantErr:  "is a symlink; nodegc neither replaces nor follows it: name the file it points to, or - for stdout",
		},
		{
			name: "a character device (a null device made here) is written in place, not replaced",
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "null")
				if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
					t.Skipf("mknod needs root: %v", err)
				}
				return p
			},
			wantType: fs.ModeDevice | fs.ModeCharDevice,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.make(t, t.TempDir())
			_, ep := startSimnode(t, simnode.Options{Seed: 1})
			if tt.wantCode != 0 {
				ep = "unix:///nonexistent/nodegc.sock" // refused before it is dialled
			}
			c := newCLI("")
			code := c.run("snapshot", "-o", path, "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--kubelet-pid", "-1", "--pod-source", "off")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tt.wantCode, c.err.String())
			}
			if lines := c.stderrLines(); tt.wantErr != "" && (len(lines) != 1 || !strings.Contains(lines[0], tt.wantErr)) {
				t.Errorf("stderr %q, want one line with %q", lines, tt.wantErr)
			}
			fi, err := os.Lstat(path)
			if err != nil || fi.Mode().Type() != tt.wantType {
				t.Fatalf("afterwards %s: %v, %v; want type %v", path, fi, err, tt.wantType)
			}
			if tt.wantType == 0 {
				var doc snapshotDoc
				if b, _ := os.ReadFile(path); json.Unmarshal(b, &doc) != nil {
					t.Errorf("%s holds no snapshot: %q", path, b)
				}
			}
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "target.json")); err == nil && string(b) != "keep" {
				t.Errorf("the symlink's target was written: %q", b)
			}
		})
	}
}
