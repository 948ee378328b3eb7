package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
)

// statusConfig is the part of the runtime's CRI config, reported by the
// verbose Status under "config", that names the sandbox image: containerd
// 1.x has sandboxImage; pinnedImages.sandbox and CRI-O-style pause_image are
// read too. containerd 2.2 names none of them there (its verbose config
// holds only the runtime section, pinned by TestRuntimeDifferences); it pins
// its sandbox image instead, and the images READY sandboxes run are read
// from their status. Absent keys are fine.
type statusConfig struct {
	SandboxImage string            `json:"sandboxImage"`
	PinnedImages map[string]string `json:"pinnedImages"`
	PauseImage   string            `json:"pause_image"`
}

// sandboxImagesFromConfig returns the sandbox images a runtime's verbose
// Status "config" JSON names; nothing when it names none or is not JSON.
func sandboxImagesFromConfig(raw string) []string {
	var cfg statusConfig
	if raw == "" || json.Unmarshal([]byte(raw), &cfg) != nil {
		return nil
	}
	var out []string
	for _, im := range []string{cfg.SandboxImage, cfg.PinnedImages["sandbox"], cfg.PauseImage} {
		if im != "" && !slices.Contains(out, im) {
			out = append(out, im)
		}
	}
	return out
}

func (c *Client) status(ctx context.Context) (map[string]string, error) {
	ctx, cancel := c.readContext(ctx)
	defer cancel()
	resp, err := c.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return nil, c.mapError("runtime status", err)
	}
	return resp.GetInfo(), nil
}

// StatusInfo returns the runtime's verbose status info, as `crictl info`
// prints it: runtime-specific keys, each holding a JSON document.
func (c *Client) StatusInfo(ctx context.Context) (map[string]string, error) {
	return c.status(ctx)
}

// Info names the runtime and its sandbox images: the ones its verbose
// Status config names, and the one every READY sandbox runs (cached by
// sandbox ID and seeded from Options.SandboxImages, so only sandboxes no
// run has seen are looked up). Those are learned, on containerd, from its
// containers service's one List of the sandboxes' records, and otherwise
// from each sandbox's verbose status.
// It fails closed: when the image of a READY sandbox cannot be learned,
// Info returns an error, and no image is removed on its word.
func (c *Client) Info(ctx context.Context) (engine.RuntimeInfo, error) {
	rctx, cancel := c.readContext(ctx)
	resp, err := c.rt.ListPodSandbox(rctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	cancel()
	if err != nil {
		return engine.RuntimeInfo{}, c.mapError("list ready sandboxes", err)
	}
	ready := make([]string, len(resp.GetItems()))
	for i, s := range resp.GetItems() {
		ready[i] = s.GetId()
	}
	return c.info(ctx, ready)
}

// InfoFor is Info for the READY sandboxes of a listing the caller has just
// made (engine.SandboxInfoReader), which it does not list again.
func (c *Client) InfoFor(ctx context.Context, sandboxes []engine.Sandbox) (engine.RuntimeInfo, error) {
	var ready []string
	for _, s := range sandboxes {
		if s.State == engine.SandboxReady {
			ready = append(ready, s.ID)
		}
	}
	return c.info(ctx, ready)
}

// info is Info for the READY sandboxes ready.
func (c *Client) info(ctx context.Context, ready []string) (engine.RuntimeInfo, error) {
	v, err := c.version(ctx)
	if err != nil {
		return engine.RuntimeInfo{}, err
	}
	ri := engine.RuntimeInfo{Name: v.GetRuntimeName(), Version: v.GetRuntimeVersion(), Endpoint: c.endpoint}
	info, err := c.status(ctx)
	if err != nil {
		return engine.RuntimeInfo{}, err
	}
	configured := sandboxImagesFromConfig(info["config"])
	running, silent, err := c.runningSandboxImages(ctx, ready)
	if err != nil {
		return engine.RuntimeInfo{}, err
	}
	if silent != "" && len(configured) == 0 {
		return engine.RuntimeInfo{}, fmt.Errorf("sandbox images: READY sandbox %s does not say which image it runs, and the runtime config names none", silent)
	}
	images := append(configured, running...)
	slices.Sort(images)
	images = slices.Compact(images)
	if len(images) > 0 && images[0] == "" {
		images = images[1:]
	}
	ri.SandboxImages = images
	return ri, nil
}

// SandboxImages returns the image of each READY sandbox Info has seen, by
// sandbox ID, and reports whether it changed since Dial (a sandbox was
// learned or went away): what Options.SandboxImages of a later run
// takes.
func (c *Client) SandboxImages() (images map[string]string, changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.sandboxImages), c.sandboxLearnt
}

// sandboxStatusWorkers bounds the sandbox status calls Info has in flight
// when it learns the images of new READY sandboxes.
const sandboxStatusWorkers = 8

// runningSandboxImages returns the images the READY sandboxes ready run.
// silent names a READY sandbox whose verbose status gives no image (the
// runtime's configured sandbox image is then the one it runs). The images
// not yet known are taken from containerd's bulk answer where it names
// them (bulkSandboxImages), and asked one sandbox at a time otherwise. A
// status call that fails for any reason but NotFound fails the whole call.
func (c *Client) runningSandboxImages(ctx context.Context, ready []string) (images []string, silent string, err error) {
	images, silent, unknown := c.knownSandboxImages(ready)
	bulk := 0
	var bulkErr error
	if len(unknown) > 0 {
		want := make(map[string]bool, len(unknown))
		for _, id := range unknown {
			want[id] = true
		}
		var got map[string]string
		if got, bulkErr = c.bulkSandboxImages(ctx, want); bulkErr == nil && len(got) > 0 {
			c.mu.Lock()
			rest := unknown[:0:0]
			for _, id := range unknown {
				if im, ok := got[id]; ok {
					c.sandboxImages[id] = im
					images = append(images, im)
					continue
				}
				rest = append(rest, id)
			}
			c.sandboxLearnt = true
			c.mu.Unlock()
			bulk, unknown = len(unknown)-len(rest), rest
		}
	}
	if c.o.Logger != nil {
		args := []any{"ready", len(ready), "known", len(ready) - len(unknown) - bulk, "bulk", bulk, "asked", len(unknown)}
		if bulkErr != nil {
			args = append(args, "bulk_error", bulkErr.Error())
		}
		c.o.Logger.DebugContext(ctx, "sandbox images", args...)
	}
	asked, askedSilent, err := c.askSandboxImages(ctx, unknown)
	if err != nil {
		return nil, "", err
	}
	if silent == "" {
		silent = askedSilent
	}
	return append(images, asked...), silent, nil
}

// knownSandboxImages returns the cached images of the READY sandboxes
// ready, the first of them whose image is "" (silent), and those whose
// image is not cached; it forgets the sandboxes no longer READY.
func (c *Client) knownSandboxImages(ready []string) (images []string, silent string, unknown []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	present := make(map[string]bool, len(ready))
	for _, id := range ready {
		present[id] = true
		if im, ok := c.sandboxImages[id]; ok {
			images = append(images, im)
			if im == "" && silent == "" {
				silent = id
			}
		} else {
			unknown = append(unknown, id)
		}
	}
	for id := range c.sandboxImages {
		if !present[id] {
			delete(c.sandboxImages, id)
			c.sandboxLearnt = true
		}
	}
	return images, silent, unknown
}

// askSandboxImages asks each sandbox of unknown for its image by a verbose
// PodSandboxStatus, sandboxStatusWorkers in flight. A sandbox gone
// (NotFound) is skipped; any other failure fails the call.
func (c *Client) askSandboxImages(ctx context.Context, unknown []string) (images []string, silent string, err error) {
	learned := make([]string, len(unknown))
	errs := make([]error, len(unknown))
	sem := make(chan struct{}, sandboxStatusWorkers)
	var wg sync.WaitGroup
	for i, id := range unknown {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, info, err := c.sandboxStatus(ctx, id)
			learned[i], errs[i] = info.Image, err
		}()
	}
	wg.Wait()
	for i, id := range unknown {
		switch {
		case errors.Is(errs[i], engine.ErrNotFound):
			continue
		case errs[i] != nil:
			return nil, "", errs[i]
		}
		images = append(images, learned[i])
		if learned[i] == "" && silent == "" {
			silent = id
		}
	}
	return images, silent, nil
}
