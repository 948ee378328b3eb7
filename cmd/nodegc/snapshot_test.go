package main

import (
	"encoding/json"
	"strings"
	"testing"

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
			if code := c.run("snapshot", "--runtime-endpoint", ep, "--state-dir", t.TempDir()); code != 0 {
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
