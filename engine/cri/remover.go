package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemoveImage removes an image by ID or reference. A runtime that no
// longer has it answers success (the CRI asks removals to be idempotent)
// or NotFound, which wraps engine.ErrNotFound.
func (c *Client) RemoveImage(ctx context.Context, id string) error {
	ctx, cancel := c.removeContext(ctx, 0)
	defer cancel()
	if _, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}}); err != nil {
		return c.mapError("remove image "+id, err)
	}
	return nil
}

// StopContainer stops a container, giving it timeout to exit before it
// is killed. The call's deadline is the timeout plus Options.RemoveTimeout.
func (c *Client) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	ctx, cancel := c.removeContext(ctx, max(timeout, 0))
	defer cancel()
	req := &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: int64(max(timeout, 0) / time.Second)}
	if _, err := c.rt.StopContainer(ctx, req); err != nil {
		return c.mapError("stop container "+id, err)
	}
	return nil
}

// RemoveContainer removes a container that is not running.
func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := c.removeContext(ctx, 0)
	defer cancel()
	if _, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return c.mapError("remove container "+id, err)
	}
	return nil
}

// StopSandbox stops a pod sandbox and the containers in it.
func (c *Client) StopSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.removeContext(ctx, 0)
	defer cancel()
	if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return c.mapError("stop sandbox "+id, err)
	}
	return nil
}

// RemoveSandbox removes a stopped pod sandbox and its containers.
func (c *Client) RemoveSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.removeContext(ctx, 0)
	defer cancel()
	if _, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return c.mapError("remove sandbox "+id, err)
	}
	return nil
}
