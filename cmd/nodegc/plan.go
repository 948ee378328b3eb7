package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/engine"
)

// planOptions are nodegc plan's flags and dependencies.
type planOptions struct {
	IO     *factory
	Global *globalOptions
	// From is a NodeSnapshot file to plan from instead of the runtime.
	From string
	// Output is "table" or "json".
	Output string
	// Now is the evaluation time (RFC 3339); "" means the snapshot's
	// takenAt.
	Now    string
	Pass   passFlags
	Policy policyFlags
}

// newCmdPlan builds `nodegc plan`. runF, when set, replaces runPlan so
// tests can check how flags become options.
func newCmdPlan(f *factory, g *globalOptions, runF func(context.Context, *planOptions) error) *cobra.Command {
	opts := &planOptions{IO: f, Global: g}
	cmd := &cobra.Command{
		Use:   "plan [--from SNAPSHOT | --runtime-endpoint EP] [-o table|json] [--now T]",
		Short: "Show what a GC pass would remove, and why everything else stays",
		Long: `Plan a garbage collection pass with the kubelet's rules and print it.

The plan is made from the live runtime (read-only: plan cannot delete
anything, the CRI client it uses has no mutating method) or from a
NodeSnapshot file written by "nodegc snapshot". It shows the effective policy
and where each value came from (flag, kubelet config, default), the image
filesystem's usage against the high/low band, every image in eviction (LRU)
order with the cut line where the space pass stops, why each kept image
stays, the dead containers of each pod and which of them go, the sandboxes
and log paths to remove, the disk reserve and the events the kubelet would
emit.

The evaluation time is --now when given, else the snapshot's takenAt.

Exit status: 0 with a plan, 1 when the runtime cannot be reached, 2 on bad
input (a flag, the kubelet config, the snapshot file).`,
		Example: `  # Plan against this node's runtime (reads /var/lib/kubelet/config.yaml if present)
  sudo nodegc plan

  # Plan from a snapshot taken earlier, at a fixed time, as JSON
  nodegc plan --from snap.json --now 2026-01-02T15:04:05Z -o json

  # What would a stricter policy remove?
  nodegc plan --from snap.json --image-gc-high-threshold 70 --image-gc-low-threshold 60

  # Only image GC, against a given runtime
  nodegc plan --images --runtime-endpoint unix:///run/containerd/containerd.sock`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Policy.Changed = changedFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPlan(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.From, "from", "", "plan from this NodeSnapshot JSON file instead of the runtime")
	fl.StringVarP(&opts.Output, "output", "o", "table", "output format: table or json (the GCPlan contract)")
	fl.StringVar(&opts.Now, "now", "", "evaluation time, RFC 3339 (default: the snapshot's takenAt)")
	addPassFlags(fl, &opts.Pass)
	addPolicyFlags(fl, &opts.Policy)
	return cmd
}

// runPlan plans a pass and prints it.
func runPlan(ctx context.Context, opts *planOptions) error {
	if err := checkOutput(opts.Output); err != nil {
		return err
	}
	now, err := parseNow(opts.Now)
	if err != nil {
		return err
	}
	kind, err := opts.Pass.kind()
	if err != nil {
		return err
	}
	if opts.From != "" && opts.Global.RuntimeEndpoint != "" {
		return usageErrorf("--from: cannot be combined with --runtime-endpoint")
	}
	if opts.From != "" && opts.Global.Simulated {
		return usageErrorf("--from: cannot be combined with --simulated (a snapshot is planned as it was taken)")
	}
	live := opts.From == ""
	if live {
		// An agent holds the node: its records make the kubelet's plan.
		if c, st, err := probeAgent(ctx, opts.Global, true); err != nil {
			return err
		} else if c != nil {
			defer c.Close()
			view, err := attachedPlan(ctx, c, st, opts, kind, now)
			if err != nil {
				return err
			}
			if opts.IO.OutWidth != nil {
				view.Width = opts.IO.OutWidth()
			}
			return writePlan(opts.IO.Out, opts.Output, view, opts.IO.OutIsTerminal())
		}
	}
	cfg, err := loadConfig(opts.IO, opts.Global, live)
	if err != nil {
		return err
	}
	policy, prov, err := resolvePolicy(opts.Policy, cfg)
	if err != nil {
		return err
	}

	var view planView
	if live {
		conn, err := connect(ctx, opts.IO, opts.Global, cfg, true, false)
		if err != nil {
			return err
		}
		defer conn.Close()
		view, err = livePlan(ctx, opts.IO, opts.Global, conn, engine.Options{
			Reader:    conn.Reader,
			Statfs:    conn.Statfs,
			Policy:    policy,
			StateDir:  opts.Global.StateDir,
			ScanLogs:  conn.scanLogs(),
			PodSource: conn.podSource(),
		}, kind, now)
		if err != nil {
			return err
		}
		view.EndpointSource = conn.Source
	} else {
		s, err := readSnapshot(opts.From)
		if err != nil {
			return err
		}
		at := s.TakenAt
		if !now.IsZero() {
			at = now
		}
		view = planView{Snapshot: s}
		if opts.Output == "json" {
			// The explanation is made while the plan is written.
			view.Plan, view.Explain = engine.PlanExplained(s, policy, kind, at)
		} else {
			view.Plan = engine.PlanPass(s, policy, kind, at)
		}
	}
	view.Settings = prov
	if opts.IO.OutWidth != nil {
		view.Width = opts.IO.OutWidth()
	}
	return writePlan(opts.IO.Out, opts.Output, view, opts.IO.OutIsTerminal())
}

// livePlan snapshots the runtime through an engine and plans a pass of the
// kind at now (zero: the snapshot's time). The engine keeps image records
// in the state dir; when that cannot be written (not root), a plan still
// works, with in-memory records, and says so.
func livePlan(ctx context.Context, f *factory, g *globalOptions, conn *runtimeConn, o engine.Options, kind engine.PassKind, now time.Time) (planView, error) {
	e, err := newEngine(f, g, o)
	if err != nil {
		return planView{}, err
	}
	s, p, err := e.PlanAt(ctx, kind, now)
	if err != nil {
		return planView{}, fmt.Errorf("snapshot %s: %w", conn.Endpoint, err)
	}
	return planView{Snapshot: s, Plan: p}, nil
}

// newEngine creates the engine. An engine that can remove (o.Remover set)
// needs a usable state dir for its journal, and gets a usage error
// without one; a read-only engine falls back to in-memory records, with a
// warning.
func newEngine(f *factory, g *globalOptions, o engine.Options) (*engine.Engine, error) {
	if o.Remover != nil {
		if err := checkStateDir(o.StateDir); err != nil {
			return nil, err
		}
		// The dashboard's log is in the state dir, which the checks leave
		// as they found it: the runtime has answered, so it is made now
		// (alone, as the engine makes it), before the log opens in it.
		if g.logDefault {
			if err := os.Mkdir(o.StateDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, usageErrorf("--state-dir: %s cannot be created (%v)", o.StateDir, ioCause(err))
			}
		}
	}
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	o.Logger = log
	e, err := engine.New(o)
	if err != nil {
		return nil, err
	}
	if w := e.Warning(); w != nil {
		f.warnf("%v", w)
	}
	return e, nil
}

// readSnapshot reads and decodes a NodeSnapshot file; errors name the file
// and the field.
func readSnapshot(path string) (engine.Snapshot, error) {
	data, err := readWhole(path)
	if err != nil {
		return engine.Snapshot{}, &fileError{Path: path, Err: ioCause(err)}
	}
	s, err := engine.DecodeSnapshot(data)
	if err != nil {
		var se *engine.SnapshotError
		if errors.As(err, &se) {
			return engine.Snapshot{}, &fileError{Path: path, Field: se.Field, Err: errors.New(se.Msg)}
		}
		return engine.Snapshot{}, &fileError{Path: path, Err: err}
	}
	return s, nil
}

// explainedPlan is the GCPlan contract with the engine's explanation of
// it beside the plan's own fields: the rows the table shows (rank,
// action, reason, detail, the cut line).
type explainedPlan struct {
	engine.Plan
	Explanation engine.Explanation `json:"explanation"`
}

// writePlan prints the plan as a table or as GCPlan JSON with its
// explanation. Compact JSON (not a terminal) is written as it is made
// (engine.WritePlanJSON, the same bytes as encoding/json): a big node's
// plan is as large as its snapshot; it is marshalled on every core, the
// explanation made meanwhile (v.Explain's, or here).
func writePlan(w io.Writer, output string, v planView, indent bool) error {
	if output != "json" {
		return renderPlanTable(w, v)
	}
	switch {
	case indent && v.Explain != nil:
		return writeJSON(w, explainedPlan{v.Plan, v.Explain()}, true)
	case indent:
		return writeJSON(w, explainedPlan{v.Plan, engine.Explain(v.Snapshot, v.Plan)}, true)
	case v.Explain != nil:
		return engine.WritePlanJSONWith(w, v.Plan, v.Explain)
	}
	return engine.WriteExplainedPlanJSON(w, v.Snapshot, v.Plan)
}

// writeJSON writes v as JSON and a newline: indented for a person at a
// terminal, compact otherwise (a plan of a big node is tens of megabytes,
// and indenting it costs more than planning it; pipe it to jq to read it).
func writeJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// checkOutput validates -o for the table/json commands.
func checkOutput(o string) error {
	if o != "table" && o != "json" {
		return usageErrorf("--output: must be table or json, got %q", o)
	}
	return nil
}

// parseNow parses --now; "" is the zero time.
func parseNow(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usageErrorf("--now: %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
	}
	return t, nil
}
