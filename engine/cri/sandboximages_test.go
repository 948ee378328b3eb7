package cri

import (
	"context"
	"fmt"
	"slices"
	"testing"

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

// TestInfoLearnsEveryReadySandboxImage pins issue 8 item 2: 40 READY
// sandboxes, the last 5 on pause:3.6 and 35 before them on pause:3.9. Every
// READY sandbox's image must be known before any image is removed, or Info
// fails closed.
func TestInfoLearnsEveryReadySandboxImage(t *testing.T) {
	mk := func() *critest.Sandboxes {
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
