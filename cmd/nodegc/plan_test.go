package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

func TestPlanFromSnapshotJSON(t *testing.T) {
	snap := writeFile(t, "snap.json", snapshotJSON)
	c := newCLI("")
	if code := c.run("plan", "--from", snap, "-o", "json"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, c.err.String())
	}
	if c.err.Len() != 0 {
		t.Errorf("stderr %q, want nothing", c.err.String())
	}
	var p engine.Plan
	if err := json.Unmarshal(c.out.Bytes(), &p); err != nil {
		t.Fatalf("stdout is not a plan: %v\n%s", err, c.out.String())
	}
	var raw map[string]any
	json.Unmarshal(c.out.Bytes(), &raw)
	for _, k := range []string{"apiVersion", "kind", "evaluatedAt", "policy", "imageGC", "containerGC", "sandboxGC", "diskReserve"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("plan JSON has no %q", k)
		}
	}
	if p.Kind != engine.KindPlan || p.APIVersion != engine.APIVersion {
		t.Errorf("kind %q apiVersion %q", p.Kind, p.APIVersion)
	}
	if got := p.EvaluatedAt.Format("2006-01-02T15:04:05Z07:00"); got != "2026-01-02T15:00:00Z" {
		t.Errorf("evaluatedAt %s, want the snapshot's takenAt", got)
	}
	var removed []string
	for _, r := range p.ImageGC.Remove {
		removed = append(removed, r.ID)
	}
	if strings.Join(removed, ",") != idOld+","+idIdle {
		t.Errorf("images removed %v, want the old then the idle image", removed)
	}
	if len(p.ContainerGC.Remove) != 1 || p.ContainerGC.Remove[0].ID != "c2" {
		t.Errorf("containers removed %+v, want the older dead attempt c2", p.ContainerGC.Remove)
	}
	if p.ImageGC.UsagePercent != 90 || !p.ImageGC.Triggered || p.ImageGC.BytesToFree != 100 {
		t.Errorf("usage %d triggered %v to free %d", p.ImageGC.UsagePercent, p.ImageGC.Triggered, p.ImageGC.BytesToFree)
	}

	t.Run("--now moves the evaluation time and the policy flags apply", func(t *testing.T) {
		c := newCLI("")
		code := c.run("plan", "--from", snap, "-o", "json", "--now", "2026-01-02T15:00:00Z",
			"--minimum-image-ttl-duration", "4h")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		var p engine.Plan
		if err := json.Unmarshal(c.out.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		// old:1 was first seen 3h before: too young under a 4h TTL.
		if len(p.ImageGC.Remove) != 1 || p.ImageGC.Remove[0].ID != idIdle {
			t.Errorf("removed %+v, want only the idle image", p.ImageGC.Remove)
		}
		if p.Policy.Image.MinAge.String() != "4h0m0s" {
			t.Errorf("policy MinAge %s", p.Policy.Image.MinAge)
		}
	})

	t.Run("the table shows the policy provenance, the cut line and the dead containers", func(t *testing.T) {
		cfg := writeFile(t, "kubelet.yaml", "kind: KubeletConfiguration\nimageGCLowThresholdPercent: 80\n")
		c := newCLI("")
		if code := c.run("plan", "--from", snap, "--kubelet-config", cfg, "--image-gc-high-threshold", "88"); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		out := c.out.String()
		for _, want := range []string{
			"--image-gc-high-threshold                88             flag",
			"--image-gc-low-threshold                 80             kubelet config " + cfg,
			"--minimum-image-ttl-duration             2m0s           default",
			"Runtime:     containerd 1.6.20 at unix:///run/containerd/containerd.sock",
			"──── cut line: removals above free 110 B of 100 B to free ────",
			"  default/web",
			"remove #1 per-container-limit",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestPlanFromJSONIsPlanPassAndExplain pins `plan --from -o json`, piped
// (compact, written as it is made) and at a terminal (indented), to one
// encoding/json Encode of engine.PlanPass's plan of the snapshot and
// engine.Explain's explanation of it, byte for byte, for every pass kind.
func TestPlanFromJSONIsPlanPassAndExplain(t *testing.T) {
	snap := writeFile(t, "snap.json", snapshotJSON)
	s, err := engine.DecodeSnapshot([]byte(snapshotJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, pass := range [][]string{nil, {"--images"}, {"--containers"}, {"--reclaim-all"}} {
		for _, tty := range []bool{false, true} {
			c := newCLI("")
			c.tty = tty
			args := append([]string{"plan", "--from", snap, "-o", "json", "--kubelet-config", os.DevNull}, pass...)
			if code := c.run(args...); code != 0 {
				t.Fatalf("%v: exit %d, stderr %q", args, code, c.err.String())
			}
			var got engine.Plan
			if err := json.Unmarshal(c.out.Bytes(), &got); err != nil {
				t.Fatalf("%v: stdout is not a plan: %v", args, err)
			}
			p := engine.PlanPass(s, got.Policy, got.Pass, got.EvaluatedAt)
			var want bytes.Buffer
			if err := writeJSON(&want, explainedPlan{p, engine.Explain(s, p)}, tty); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(c.out.Bytes(), want.Bytes()) {
				t.Errorf("%v, terminal %v: the plan is not PlanPass's and Explain's:\n got %s\nwant %s", args, tty, c.out.Bytes(), want.Bytes())
			}
		}
	}
}
