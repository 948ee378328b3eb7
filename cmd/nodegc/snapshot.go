package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

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
	e, err := newEngine(f, opts.Global, engine.Options{Reader: conn.Reader, Policy: policy, StateDir: opts.Global.StateDir, ScanLogs: conn.scanLogs()})
	if err != nil {
		return err
	}
	s, err := e.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", conn.Endpoint, err)
	}
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
