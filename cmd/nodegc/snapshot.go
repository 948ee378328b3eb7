package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/safefile"
)

// snapshotOptions are nodegc snapshot's flags and dependencies.
type snapshotOptions struct {
	IO     *factory
	Global *globalOptions
	// Output is the file to write; "" or "-" is stdout.
	Output string
	// PodLogsDir overrides the kubelet config's podLogsDir.
	PodLogsDir string
	Changed    map[string]bool
}

// newCmdSnapshot builds `nodegc snapshot`. runF, when set, replaces
// runSnapshot.
func newCmdSnapshot(f *factory, g *globalOptions, runF func(context.Context, *snapshotOptions) error) *cobra.Command {
	opts := &snapshotOptions{IO: f, Global: g}
	cmd := &cobra.Command{
		Use:   "snapshot [-o FILE]",
		Short: "Write the node's state as a NodeSnapshot JSON document",
		Long: `Read the runtime (read-only) and write what the planners need as a
NodeSnapshot JSON document: the runtime, the image and root filesystems, the
images with their records (first detected, last used), the sandboxes, the
containers, the pod source and the log files.

"nodegc plan --from FILE" plans from it, on this node or another machine, so a
plan can be reviewed, attached to a ticket, or replayed under another policy.
Written to a regular file (or a new name), the document replaces it
atomically, so a reader never sees half of it. A device or a FIFO is written
in place (-o /dev/null discards the document; a FIFO's reader must already
be running); a symlink is refused, never replaced or followed: name the file
it points to, or - for stdout.`,
		Example: `  # Save this node's state
  sudo nodegc snapshot -o snap.json

  # ... and plan from it elsewhere, at a fixed time
  nodegc plan --from snap.json --now 2026-01-02T15:04:05Z`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Changed = changedFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSnapshot(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "file to write, replaced atomically; a device or FIFO is written in place, a symlink refused (default: stdout)")
	cmd.Flags().StringVar(&opts.PodLogsDir, flagPodLogsDir, engine.DefaultPodLogsDir, "the kubelet's podLogsDir, scanned for pod log directories")
	return cmd
}

// runSnapshot takes a snapshot and writes it.
func runSnapshot(ctx context.Context, opts *snapshotOptions) error {
	f := opts.IO
	toStdout := opts.Output == "" || opts.Output == "-"
	if !toStdout {
		if err := safefile.Check(opts.Output); err != nil {
			return outputError(opts.Output, err)
		}
	}
	cfg, err := loadConfig(f, opts.Global, true)
	if err != nil {
		return err
	}
	policy, _, err := resolvePolicy(policyFlags{PodLogsDir: opts.PodLogsDir, Changed: opts.Changed}, cfg)
	if err != nil {
		return err
	}
	conn, err := connect(ctx, f, opts.Global, cfg, true, true)
	if err != nil {
		return err
	}
	defer conn.Close()
	e, err := newEngine(f, opts.Global, engine.Options{Reader: conn.Reader, Statfs: conn.Statfs, Policy: policy, StateDir: opts.Global.StateDir, ScanLogs: conn.scanLogs(), PodSource: conn.podSource()})
	if err != nil {
		return err
	}
	s, err := e.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", conn.Endpoint, err)
	}
	s = withEmptyLists(s)
	var b bytes.Buffer
	if err := writeJSON(&b, s, toStdout && f.OutIsTerminal()); err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	if toStdout {
		_, err := f.Out.Write(b.Bytes())
		return err
	}
	if err := safefile.Write(opts.Output, b.Bytes(), 0o644); err != nil {
		return outputError(opts.Output, err)
	}
	return nil
}

// outputError is the error for an -o file that cannot be written: a
// symlink or a directory is bad input (exit 2), refused before any work,
// in one line naming the flag.
func outputError(path string, err error) error {
	switch {
	case errors.Is(err, safefile.ErrSymlink):
		return usageErrorf("--output: %s %v, or - for stdout", path, safefile.ErrSymlink)
	case errors.Is(err, safefile.ErrDirectory):
		return usageErrorf("--output: %s %v: name a file in it, or - for stdout", path, safefile.ErrDirectory)
	}
	return &fileError{Path: path, Err: ioCause(err)}
}

// withEmptyLists returns s with every nil list of the NodeSnapshot
// contract made empty, so the document has [] where the contract says an
// array and never null: images[].repoTags and repoDigests,
// podSource.removablePodUIDs, the top-level lists, and the log lists when
// logs were scanned. Go leaves a list nil when the runtime sent none, and
// encoding/json writes nil as null, which strict readers of the contract
// reject. s's own slices are not modified: they may be the engine's.
func withEmptyLists(s engine.Snapshot) engine.Snapshot {
	s.Images = nonNil(s.Images)
	if slices.ContainsFunc(s.Images, func(im engine.Image) bool { return im.RepoTags == nil || im.RepoDigests == nil }) {
		images := slices.Clone(s.Images)
		for i := range images {
			images[i].RepoTags = nonNil(images[i].RepoTags)
			images[i].RepoDigests = nonNil(images[i].RepoDigests)
		}
		s.Images = images
	}
	s.ImageRecords = nonNil(s.ImageRecords)
	s.Sandboxes = nonNil(s.Sandboxes)
	s.Containers = nonNil(s.Containers)
	s.PodSource.RemovablePodUIDs = nonNil(s.PodSource.RemovablePodUIDs)
	if s.Logs != nil {
		logs := *s.Logs
		logs.PodDirs = nonNil(logs.PodDirs)
		logs.ContainerLinks = nonNil(logs.ContainerLinks)
		s.Logs = &logs
	}
	return s
}

// nonNil returns s, or an empty slice when s is nil.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
