package executor

import (
	"slices"
	"testing"
	"time"
)

// kneeEpoch is one scripted epoch of the adaptive pool: the probes that
// answer in it (milliseconds), then as many removals as the pool's width
// ending at rate removals per second, the pool full unless notFull.
type kneeEpoch struct {
	probes  []float64
	rate    float64
	notFull bool
}

// kneeWant is what the controller must decide in an epoch, and the width
// it must leave.
type kneeWant struct {
	d     kneeDecision
	width int
}

// playKnee plays one epoch on k with the fake clock at *now: the probes
// first (a decision on a probe ends the epoch there), then the removals,
// the clock moving so that they end at the epoch's rate. It returns the
// decision ("" when the epoch did not close).
func playKnee(k *Knee, now *time.Time, e kneeEpoch) kneeDecision {
	for _, p := range e.probes {
		if d := k.probed(time.Duration(p * float64(time.Millisecond))); d != "" {
			return d
		}
	}
	w := k.limit()
	if !e.notFull {
		k.started(w)
	} else {
		k.started(w - 1)
	}
	*now = now.Add(time.Duration(float64(w) / e.rate * float64(time.Second)))
	var d kneeDecision
	for range w {
		d = k.finished()
	}
	return d
}

func TestKneeDecisions(t *testing.T) {
	serial := []float64{10, 10} // the serial pace: 10 ms per probe pair
	at := func(rate float64) kneeEpoch { return kneeEpoch{rate: rate} }
	probes := func(rate float64, ms ...float64) kneeEpoch { return kneeEpoch{probes: ms, rate: rate} }
	holds := func(n, width int) []kneeWant {
		var out []kneeWant
		for range n {
			out = append(out, kneeWant{kneeHold, width})
		}
		return out
	}
	// toFour grows to 4 and holds there (settled: its probes count).
	toFour := []kneeEpoch{{probes: serial, rate: 40}, at(80), at(85)}
	fourWant := []kneeWant{{kneeGrow, 2}, {kneeGrow, 4}, {kneeHold, 4}}
	cases := []struct {
		name   string
		widest int
		epochs []kneeEpoch
		want   []kneeWant
	}{
		{
			name:   "the pool doubles while the removals per second rise",
			widest: 64,
			epochs: []kneeEpoch{{probes: serial, rate: 40}, at(80), at(150), at(300), at(500)},
			want:   []kneeWant{{kneeGrow, 2}, {kneeGrow, 4}, {kneeGrow, 8}, {kneeGrow, 16}, {kneeGrow, 32}},
		},
		{
			name:   "it needs two probes at one in flight before it grows",
			widest: 64,
			epochs: []kneeEpoch{probes(40, 10), probes(40, 10), at(80)},
			want:   []kneeWant{{kneeHold, 1}, {kneeGrow, 2}, {kneeGrow, 4}},
		},
		{
			name:   "without a probe answered at one in flight the pool stays serial",
			widest: 64,
			epochs: []kneeEpoch{at(40), at(80), at(160)},
			want:   holds(3, 1),
		},
		{
			name:   "a wider pool that brings less than a tenth more is held",
			widest: 64,
			epochs: append(toFour, at(85), at(200)),
			want:   append(fourWant, kneeWant{kneeHold, 4}, kneeWant{kneeHold, 4}),
		},
		{
			name:   "a wider pool that is slower goes back to the width before",
			widest: 64,
			epochs: []kneeEpoch{{probes: serial, rate: 40}, at(80), at(70), at(90)},
			want:   []kneeWant{{kneeGrow, 2}, {kneeGrow, 4}, {kneeHold, 2}, {kneeHold, 2}},
		},
		{
			name:   "a wider pool that is slower by less than a tenth is held: a rate of a few removals is noisy",
			widest: 64,
			epochs: []kneeEpoch{{probes: serial, rate: 40}, at(80), at(75), at(200)},
			want:   []kneeWant{{kneeGrow, 2}, {kneeGrow, 4}, {kneeHold, 4}, {kneeHold, 4}},
		},
		{
			name:   "it backs off when the PLEG's calls take longer than at one in flight, plus half",
			widest: 64,
			epochs: append(toFour, probes(85, 16, 16, 16), at(85)),
			want:   append(fourWant, kneeWant{kneeBackOff, 2}, kneeWant{kneeHold, 2}),
		},
		{
			name:   "it stays when they take up to the serial pace plus half",
			widest: 64,
			epochs: append(toFour, probes(85, 15, 15, 15)),
			want:   append(fourWant, kneeWant{kneeHold, 4}),
		},
		{
			name:   "one slow probe in three is noise, two are not",
			widest: 64,
			epochs: append(toFour, probes(85, 40, 9, 10), probes(85, 40), probes(85, 40)),
			want:   append(fourWant, kneeWant{kneeHold, 4}, kneeWant{kneeHold, 4}, kneeWant{kneeBackOff, 2}),
		},
		{
			name:   "the slack is at least 2 ms",
			widest: 64,
			epochs: []kneeEpoch{probes(40, 1, 1), at(80), at(85), probes(85, 2.9, 2.9, 2.9), probes(85, 3.1, 3.1)},
			want:   append(fourWant, kneeWant{kneeHold, 4}, kneeWant{kneeBackOff, 2}),
		},
		{
			name:   "probes in the first epoch at a new width say nothing of it: the removals of the width before are in flight",
			widest: 64,
			epochs: []kneeEpoch{{probes: serial, rate: 40}, probes(80, 50, 50, 50), probes(150, 50, 50, 50), probes(300, 50, 50, 50)},
			want:   []kneeWant{{kneeGrow, 2}, {kneeGrow, 4}, {kneeGrow, 8}, {kneeGrow, 16}},
		},
		{
			name:   "a pool the feeder could not fill proves nothing",
			widest: 64,
			epochs: []kneeEpoch{{probes: serial, rate: 40}, {rate: 200, notFull: true}, at(200)},
			want:   []kneeWant{{kneeGrow, 2}, {kneeHold, 2}, {kneeGrow, 4}},
		},
		{
			name:   "it never grows past the widest pool",
			widest: 4,
			epochs: []kneeEpoch{{probes: serial, rate: 40}, at(80), at(160), at(320)},
			want:   []kneeWant{{kneeGrow, 2}, {kneeGrow, 4}, {kneeHold, 4}, {kneeHold, 4}},
		},
		{
			name:   "after holding kneeRetry epochs it tries the next width again",
			widest: 64,
			epochs: append(slices.Clone(toFour), append(repeat(at(85), kneeRetry), at(200))...),
			want:   append(slices.Clone(fourWant), append(holds(kneeRetry-1, 4), kneeWant{kneeGrow, 8}, kneeWant{kneeGrow, 16})...),
		},
		{
			name:   "back at one in flight it measures the serial pace afresh, then retries",
			widest: 64,
			epochs: append([]kneeEpoch{{probes: serial, rate: 40}, at(42), probes(42, 30, 30, 30), probes(40, 30, 30), probes(40, 30, 30)},
				append(repeat(at(40), kneeRetry-2), at(40), at(42), probes(42, 40, 40, 40))...),
			want: append([]kneeWant{{kneeGrow, 2}, {kneeHold, 2}, {kneeBackOff, 1}, {kneeHold, 1}, {kneeHold, 1}},
				append(holds(kneeRetry-2, 1), kneeWant{kneeGrow, 2}, kneeWant{kneeHold, 2}, kneeWant{kneeHold, 2})...),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.epochs) != len(tc.want) {
				t.Fatalf("script has %d epochs and %d wants", len(tc.epochs), len(tc.want))
			}
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			k := NewKnee(tc.widest, func() time.Time { return now })
			if k.limit() != 1 {
				t.Fatalf("a phase starts at %d in flight, want 1", k.limit())
			}
			for i, e := range tc.epochs {
				if d := playKnee(k, &now, e); d != tc.want[i].d || k.limit() != tc.want[i].width {
					t.Fatalf("epoch %d (%+v): %q to width %d, want %q to width %d", i, e, d, k.limit(), tc.want[i].d, tc.want[i].width)
				}
			}
		})
	}
}

func TestKneeEpochWaitsForEverySlot(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := NewKnee(64, func() time.Time { return now })
	k.probed(10 * time.Millisecond)
	k.probed(10 * time.Millisecond)
	playKnee(k, &now, kneeEpoch{rate: 40})
	playKnee(k, &now, kneeEpoch{rate: 80})
	if k.limit() != 4 {
		t.Fatalf("width %d, want 4", k.limit())
	}
	k.started(4)
	now = now.Add(10 * time.Millisecond)
	for i := range 3 {
		if d := k.finished(); d != "" {
			t.Fatalf("removal %d of 4 closed the epoch (%q): every slot must cycle first", i+1, d)
		}
	}
	if d := k.finished(); d != kneeGrow {
		t.Errorf("the fourth removal: %q, want the epoch closed and grown", d)
	}
	k.started(8)
	for range 8 {
		if d := k.finished(); d != "" {
			t.Fatalf("an epoch shorter than kneeMinEpoch closed (%q)", d)
		}
	}
}

// repeat returns n copies of e.
func repeat(e kneeEpoch, n int) []kneeEpoch {
	out := make([]kneeEpoch, n)
	for i := range out {
		out[i] = e
	}
	return out
}
