package engine

import (
	"context"
	"testing"
)

// TestRemeasureImageFs pins the dashboard's usage reading between
// snapshots: before the runtime has named the image filesystem it asks
// it (ImageFs); after, it measures the named mountpoint again with no
// runtime call, and follows a mountpoint the runtime names later.
func TestRemeasureImageFs(t *testing.T) {
	rt := newFakeRuntime()
	e := newTestEngine(t, rt, true)
	ctx := context.Background()
	count := func() int {
		rt.Mu.Lock()
		defer rt.Mu.Unlock()
		n := 0
		for _, c := range rt.Calls {
			if c == "ImageFs " {
				n++
			}
		}
		return n
	}

	fs, err := e.RemeasureImageFs(ctx)
	if err != nil || fs.Mountpoint != "/fake" || fs.AvailableBytes != 100 {
		t.Fatalf("first reading: %+v, %v; want the runtime's /fake with 100 bytes available", fs, err)
	}
	if n := count(); n != 1 {
		t.Fatalf("the first reading made %d ImageFs calls; want 1 (no mountpoint known yet)", n)
	}

	rt.Mu.Lock()
	rt.Fs.AvailableBytes = 40
	rt.Mu.Unlock()
	fs, err = e.RemeasureImageFs(ctx)
	if err != nil || fs.AvailableBytes != 40 {
		t.Fatalf("second reading: %+v, %v; want 40 bytes available, measured again", fs, err)
	}
	if n := count(); n != 1 {
		t.Errorf("the second reading called ImageFs (%d calls); want a statfs alone", n)
	}

	// The runtime names another mountpoint: the next snapshot learns it.
	rt.Mu.Lock()
	rt.Fs.Mountpoint = "/moved"
	rt.Mu.Unlock()
	if _, err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	fs, err = e.RemeasureImageFs(ctx)
	if err != nil || fs.Mountpoint != "/moved" {
		t.Errorf("after a snapshot: %+v, %v; want the mountpoint the runtime named since, /moved", fs, err)
	}
}
