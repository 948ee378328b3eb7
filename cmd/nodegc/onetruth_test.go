package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/tui/containers"
	"github.com/nodegc/nodegc/tui/images"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// TestDashboardAndPlanTableAgreeWithTheDryRun (issue 11): from one
// snapshot, the dashboard's Images and Containers panes and the CLI's
// plan table show exactly the removals a dry-run (gc --dry-run) makes.
// With --image-maximum-gc-age set, within MaxAge of a fresh start the
// engine holds the age pass back: none of them shows an age removal,
// although the planner with the configured policy would make some.
func TestDashboardAndPlanTableAgreeWithTheDryRun(t *testing.T) {
	ctx := context.Background()
	o := testNode()
	o.InitialUsagePercent = 30 // below the high threshold: no space pass
	node, ep := startSimnode(t, o)
	client, err := cri.Dial(ctx, ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	pol := engine.DefaultPolicy()
	pol.Image.MaxAge = time.Hour
	start := fixedNow
	now := start
	e, err := engine.New(engine.Options{Reader: client, Statfs: simfs.Local(node), Policy: pol, StateDir: t.TempDir(),
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// The images are first seen 3h before the plan, 30m after the
	// engine's fresh start: idle past MaxAge by the records.
	now = start.Add(30*time.Minute - 3*time.Hour)
	if _, err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	now = start.Add(30 * time.Minute)
	s, err := e.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.PlanSnapshot(s, engine.PassFull, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if raw := engine.PlanPass(s, pol, engine.PassFull, now); !slices.ContainsFunc(raw.ImageGC.Remove, func(r engine.ImageRemoval) bool { return r.Reason == engine.RemoveForAge }) {
		t.Fatal("the configured policy makes no age removal: the case shows nothing")
	}
	dry, err := e.DryRun(ctx, engine.PassFull)
	if err != nil {
		t.Fatal(err)
	}
	want := map[engine.ItemKind][]string{}
	for _, it := range dry.Items {
		want[it.Kind] = append(want[it.Kind], format.ShortID(it.ID))
	}

	k, st := keys.Default(false), style.Default(true)
	im := images.New(k, st)
	im.SetSize(240, 400)
	im.SetData(s, p, now)
	ct := containers.New(k, st)
	ct.SetSize(240, 400)
	ct.SetData(s, p, now)
	var table bytes.Buffer
	if err := renderPlanTable(&table, planView{Snapshot: s, Plan: p}); err != nil {
		t.Fatal(err)
	}
	cli := table.String()
	cliImages := cli[strings.Index(cli, "Images ("):strings.Index(cli, "Dead containers")]
	cliContainers := cli[strings.Index(cli, "Dead containers"):strings.Index(cli, "Sandboxes to remove")]

	var imageIDs, containerIDs []string
	for _, im := range s.Images {
		imageIDs = append(imageIDs, format.ShortID(im.ID))
	}
	for _, c := range s.Containers {
		containerIDs = append(containerIDs, format.ShortID(c.ID))
	}
	for _, v := range []struct {
		name, text string
		kind       engine.ItemKind
		ids        []string
	}{
		{"the Images pane", ansi.Strip(im.View()), engine.ItemImage, imageIDs},
		{"the plan table's images", cliImages, engine.ItemImage, imageIDs},
		{"the plan table's containers", cliContainers, engine.ItemContainer, containerIDs},
	} {
		got := removedOn(v.text, v.ids)
		if !sameSet(got, want[v.kind]) {
			t.Errorf("%s removes %v, the dry-run %v", v.name, got, want[v.kind])
		}
		if strings.Contains(v.text, " age ") || strings.Contains(v.text, " age\n") {
			t.Errorf("%s shows an age removal within MaxAge of a fresh start:\n%s", v.name, v.text)
		}
	}
	// The Containers pane shows no IDs: count its removals.
	if got, n := strings.Count(ansi.Strip(ct.View()), "remove #"), len(want[engine.ItemContainer]); got != n {
		t.Errorf("the Containers pane shows %d removals, the dry-run %d", got, n)
	}
}

// removedOn is the IDs whose line in text says "remove #".
func removedOn(text string, ids []string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, "remove #") {
			continue
		}
		for _, id := range ids {
			if strings.Contains(l, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
