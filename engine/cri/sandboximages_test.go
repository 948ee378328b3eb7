package cri

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/critest"
)

// serveScripted dials a scripted runtime.
func serveScripted(t *testing.T, s *critest.Sandboxes) *Client {
	t.Helper()
	c, err := Dial(context.Background(), critest.Serve(t, s), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fortySandboxes is a runtime of 40 READY sandboxes, sb00-sb39, whose
// config names pause:3.9: the first 35 run it, the last 5, made before a
// config change, pause:3.6. It serves no containers List (Bulk nil).
func fortySandboxes() *critest.Sandboxes {
	s := &critest.Sandboxes{Config: `{"sandboxImage":"registry.k8s.io/pause:3.9"}`, Images: map[string]string{}}
	for i := range 40 {
		id := fmt.Sprintf("sb%02d", i)
		s.IDs = append(s.IDs, id)
		s.Images[id] = "registry.k8s.io/pause:3.9"
		if i >= 35 {
			s.Images[id] = "registry.k8s.io/pause:3.6"
		}
	}
	return s
}

// TestInfoLearnsEveryReadySandboxImage pins issue 8 item 2: 40 READY
// sandboxes, the last 5 on pause:3.6 and 35 before them on pause:3.9. Every
// READY sandbox's image must be known before any image is removed, or Info
// fails closed.
func TestInfoLearnsEveryReadySandboxImage(t *testing.T) {
	mk := fortySandboxes
	t.Run("the images of sandboxes listed late are learned", func(t *testing.T) {
		got, err := serveScripted(t, mk()).Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"registry.k8s.io/pause:3.6", "registry.k8s.io/pause:3.9"}; !slices.Equal(got.SandboxImages, want) {
			t.Errorf("sandbox images %v, want %v", got.SandboxImages, want)
		}
	})
	t.Run("a status that cannot be read fails closed", func(t *testing.T) {
		s := mk()
		s.FailID = "sb38"
		if got, err := serveScripted(t, s).Info(context.Background()); err == nil {
			t.Errorf("Info = %v, nil; want an error, so that no image is removed", got.SandboxImages)
		}
	})
	t.Run("a sandbox silent about its image with no configured image fails closed", func(t *testing.T) {
		s := mk()
		s.Config = `{}`
		s.Images["sb39"] = ""
		if got, err := serveScripted(t, s).Info(context.Background()); err == nil {
			t.Errorf("Info = %v, nil; want an error", got.SandboxImages)
		}
	})
	t.Run("a sandbox silent about its image runs the configured one", func(t *testing.T) {
		s := mk()
		s.Images["sb39"] = ""
		if _, err := serveScripted(t, s).Info(context.Background()); err != nil {
			t.Errorf("Info: %v", err)
		}
	})
}

// TestSandboxImageLearnedOncePerID pins issue 22 item 1: a sandbox's image
// never changes, so Info asks each READY sandbox once, and a client seeded
// with what an earlier one learned (Options.SandboxImages) asks only about
// sandboxes it was not given.
func TestSandboxImageLearnedOncePerID(t *testing.T) {
	srv := &critest.Sandboxes{Config: `{"sandboxImage":"registry.k8s.io/pause:3.9"}`, Images: map[string]string{}}
	for i := range 10 {
		id := fmt.Sprintf("sb%02d", i)
		srv.IDs = append(srv.IDs, id)
		srv.Images[id] = "registry.k8s.io/pause:3.6"
	}
	ep := critest.Serve(t, srv)
	ctx := context.Background()
	first := dial(t, ep, Options{})
	for range 3 {
		if _, err := first.Info(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.StatusCalls.Load(); n != 10 {
		t.Errorf("three Info calls made %d status calls, want 10 (one per sandbox)", n)
	}
	learned, changed := first.SandboxImages()
	if !changed || len(learned) != 10 {
		t.Fatalf("SandboxImages = %v, %v; want the 10 sandboxes, changed", learned, changed)
	}

	t.Run("InfoFor learns the READY sandboxes of the caller's listing, and fails closed", func(t *testing.T) {
		srv.StatusCalls.Store(0)
		c := dial(t, ep, Options{})
		listed := []engine.Sandbox{{ID: "sb00", State: engine.SandboxReady}, {ID: "sb01", State: engine.SandboxNotReady}}
		got, err := c.InfoFor(ctx, listed)
		if err != nil {
			t.Fatal(err)
		}
		if n := srv.StatusCalls.Load(); n != 1 {
			t.Errorf("%d status calls, want 1 (the READY sb00)", n)
		}
		if !slices.Contains(got.SandboxImages, "registry.k8s.io/pause:3.6") {
			t.Errorf("sandbox images %v lack sb00's pause:3.6", got.SandboxImages)
		}
		srv.FailID = "sb02"
		defer func() { srv.FailID = "" }()
		if _, err := c.InfoFor(ctx, []engine.Sandbox{{ID: "sb02", State: engine.SandboxReady}}); err == nil {
			t.Error("InfoFor = nil error for a READY sandbox whose image cannot be read; want an error")
		}
	})
	t.Run("a seeded client asks only about new sandboxes", func(t *testing.T) {
		srv.StatusCalls.Store(0)
		srv.IDs = append(srv.IDs, "sb-new")
		srv.Images["sb-new"] = "registry.k8s.io/pause:3.10"
		c := dial(t, ep, Options{SandboxImages: learned})
		got, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := srv.StatusCalls.Load(); n != 1 {
			t.Errorf("%d status calls, want 1 (sb-new)", n)
		}
		if want := []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.6", "registry.k8s.io/pause:3.9"}; !slices.Equal(got.SandboxImages, want) {
			t.Errorf("sandbox images %v, want %v", got.SandboxImages, want)
		}
	})
	t.Run("an unchanged node leaves the seed unchanged", func(t *testing.T) {
		seed := learned
		for i := range 2 {
			c := dial(t, ep, Options{SandboxImages: seed})
			if _, err := c.Info(ctx); err != nil {
				t.Fatal(err)
			}
			var changed bool
			if seed, changed = c.SandboxImages(); i == 1 && changed {
				t.Error("changed, want unchanged: nothing needs saving")
			}
		}
	})
}

// TestInfoLogsHowManySandboxesItAsked pins issue 42 item 2's --debug line:
// each Info says how many READY sandboxes there were, how many images it
// knew, how many came in bulk and how many it asked about one by one.
func TestInfoLogsHowManySandboxesItAsked(t *testing.T) {
	srv := &critest.Sandboxes{Config: `{"sandboxImage":"registry.k8s.io/pause:3.9"}`, Images: map[string]string{}}
	for i := range 6 {
		id := fmt.Sprintf("sb%02d", i)
		srv.IDs = append(srv.IDs, id)
		srv.Images[id] = "registry.k8s.io/pause:3.9"
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := dial(t, critest.Serve(t, srv), Options{Logger: log, SandboxImages: map[string]string{"sb00": "registry.k8s.io/pause:3.9"}})
	for range 2 {
		if _, err := c.Info(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// A runtime that names sb01-sb04 in bulk (containerd's containers List).
	bulk := &critest.Sandboxes{Config: srv.Config, IDs: srv.IDs, Images: srv.Images, Bulk: map[string]string{}}
	for _, id := range srv.IDs[1:5] {
		bulk.Bulk[id] = srv.Images[id]
	}
	c = dial(t, critest.Serve(t, bulk), Options{Logger: log, SandboxImages: map[string]string{"sb00": "registry.k8s.io/pause:3.9"}})
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	type line struct {
		Msg                       string
		Ready, Known, Bulk, Asked int
	}
	var got []line
	for raw := range bytes.Lines(buf.Bytes()) {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		got = append(got, l)
	}
	want := []line{{"sandbox images", 6, 1, 0, 5}, {"sandbox images", 6, 6, 0, 0}, {"sandbox images", 6, 1, 4, 1}}
	if !slices.Equal(got, want) {
		t.Errorf("logged %+v, want %+v", got, want)
	}
}
