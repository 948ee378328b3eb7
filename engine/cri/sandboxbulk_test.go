package cri

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/containerdapi"
	"github.com/nodegc/nodegc/internal/critest"
	"github.com/nodegc/nodegc/internal/simnode"
)

// TestInfoTakesSandboxImagesInBulk pins issue 42 item 2: on a runtime that
// serves containerd's containers List, Info takes the image of every READY
// sandbox that List names, and asks one by one only about the others; on
// one that does not, it asks every sandbox, as before. The fail-closed rule
// is TestInfoLearnsEveryReadySandboxImage's.
func TestInfoTakesSandboxImagesInBulk(t *testing.T) {
	// fortySandboxes, each named in bulk.
	mk := func() *critest.Sandboxes {
		s := fortySandboxes()
		s.Bulk = maps.Clone(s.Images)
		return s
	}
	both := []string{"registry.k8s.io/pause:3.6", "registry.k8s.io/pause:3.9"}
	for _, tc := range []struct {
		name   string
		change func(*critest.Sandboxes)
		status int64 // PodSandboxStatus calls; one containers List each time
	}{
		{"a sandbox made before a config change is learned in bulk", func(*critest.Sandboxes) {}, 0},
		{"the bulk answer names some, the rest are asked", func(s *critest.Sandboxes) {
			for i := 30; i < 40; i++ {
				delete(s.Bulk, fmt.Sprintf("sb%02d", i))
			}
		}, 10},
		{"a bulk record with no image is asked", func(s *critest.Sandboxes) { s.Bulk["sb39"] = "" }, 1},
		{"a runtime without the containers service is asked one by one", func(s *critest.Sandboxes) { s.Bulk = nil }, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mk()
			tc.change(s)
			got, err := serveScripted(t, s).Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.SandboxImages, both) {
				t.Errorf("sandbox images %v, want %v", got.SandboxImages, both)
			}
			if n, b := s.StatusCalls.Load(), s.BulkCalls.Load(); n != tc.status || b != 1 {
				t.Errorf("%d status calls and %d bulk calls, want %d and 1", n, b, tc.status)
			}
		})
	}
	t.Run("a sandbox neither named in bulk nor readable fails closed", func(t *testing.T) {
		s := mk()
		delete(s.Bulk, "sb38")
		s.FailID = "sb38"
		if got, err := serveScripted(t, s).Info(context.Background()); err == nil {
			t.Errorf("Info = %v, nil; want an error, so that no image is removed", got.SandboxImages)
		}
	})
	t.Run("what came in bulk is kept for the next run", func(t *testing.T) {
		c := serveScripted(t, mk())
		if _, err := c.Info(context.Background()); err != nil {
			t.Fatal(err)
		}
		learned, changed := c.SandboxImages()
		if !changed || len(learned) != 40 || learned["sb39"] != "registry.k8s.io/pause:3.6" {
			t.Errorf("SandboxImages = %d sandboxes (sb39: %q), changed %v; want the 40, sb39 on pause:3.6, changed", len(learned), learned["sb39"], changed)
		}
	})
}

// TestSandboxRecordsBelieveOnlySandboxes: a bulk record counts only when it
// is a sandbox's, of a sandbox asked about, with an image, and alone.
func TestSandboxRecordsBelieveOnlySandboxes(t *testing.T) {
	sb := map[string]string{containerdapi.KindLabel: containerdapi.KindSandbox}
	b := containerdapi.AppendListResponse(nil, []containerdapi.Container{
		{ID: "a", Labels: sb, Image: "pause:1"},
		{ID: "b", Labels: map[string]string{containerdapi.KindLabel: "container"}, Image: "app:1"},
		{ID: "c", Image: "pause:1"},
		{ID: "d", Labels: sb, Image: "pause:1"},
		{ID: "d", Labels: sb, Image: "pause:2"},
		{ID: "e", Labels: sb},
		{ID: "other", Labels: sb, Image: "pause:1"},
	})
	r := &sandboxRecords{want: map[string]bool{"a": true, "b": true, "c": true, "d": true, "e": true}}
	if err := r.decode(b); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "pause:1"}; !maps.Equal(r.images, want) {
		t.Errorf("images %v, want %v", r.images, want)
	}
	if err := r.decode(b[:len(b)-3]); err == nil {
		t.Error("a truncated answer decoded; want an error")
	}
}

// TestSimnodeSandboxImagesInBulk: the simulated node's containers List
// names, for every READY sandbox, the image its verbose PodSandboxStatus
// reports, so a cold Info makes no PodSandboxStatus call; a failing List
// leaves every sandbox asked.
func TestSimnodeSandboxImagesInBulk(t *testing.T) {
	n, ep := serve(t, simnode.Options{Seed: 5, Images: 20, Pods: 30})
	ctx := context.Background()
	c := dial(t, ep, Options{})
	sbs, err := c.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ready []string
	for _, s := range sbs {
		if s.State == engine.SandboxReady {
			ready = append(ready, s.ID)
		}
	}
	want := map[string]bool{}
	for _, id := range ready {
		want[id] = true
	}
	bulk, err := c.bulkSandboxImages(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(ready) == 0 || len(bulk) != len(ready) {
		t.Fatalf("bulk named %d of %d READY sandboxes", len(bulk), len(ready))
	}
	for _, id := range ready {
		_, info, err := c.sandboxStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if bulk[id] != info.Image {
			t.Errorf("sandbox %s: bulk %q, PodSandboxStatus %q", id, bulk[id], info.Image)
		}
	}
	statusCalls := func() (k int) {
		for _, m := range n.Calls() {
			if m == "/runtime.v1.RuntimeService/PodSandboxStatus" {
				k++
			}
		}
		return k
	}
	n.ResetCalls()
	cold := dial(t, ep, Options{})
	if _, err := cold.InfoFor(ctx, sbs); err != nil {
		t.Fatal(err)
	}
	if k := statusCalls(); k != 0 {
		t.Errorf("a cold InfoFor made %d PodSandboxStatus calls, want 0", k)
	}
	n.InjectFault(simnode.Fault{Method: containerdapi.ListMethod, Err: codes.Unimplemented})
	n.ResetCalls()
	if _, err := dial(t, ep, Options{}).InfoFor(ctx, sbs); err != nil {
		t.Fatal(err)
	}
	if k := statusCalls(); k != len(ready) {
		t.Errorf("with no bulk answer, %d PodSandboxStatus calls, want %d", k, len(ready))
	}
}
