package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/engine"
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
Written to a file, the document replaces the file atomically.`,
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
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "file to write (default: stdout)")
	cmd.Flags().StringVar(&opts.PodLogsDir, flagPodLogsDir, engine.DefaultPodLogsDir, "the kubelet's podLogsDir, scanned for pod log directories")
	return cmd
}

// runSnapshot takes a snapshot and writes it.
func runSnapshot(ctx context.Context, opts *snapshotOptions) error {
	f := opts.IO
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
	toStdout := opts.Output == "" || opts.Output == "-"
	var b bytes.Buffer
	if err := writeJSON(&b, s, toStdout && f.OutIsTerminal()); err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	if toStdout {
		_, err := f.Out.Write(b.Bytes())
		return err
	}
	if err := writeFileAtomic(opts.Output, b.Bytes(), 0o644); err != nil {
		return &fileError{Path: opts.Output, Err: ioCause(err)}
	}
	return nil
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

// writeFileAtomic writes data to a temporary file beside path, syncs it
// and renames it over path, so a reader never sees half a document.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
