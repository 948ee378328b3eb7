package format

import (
	"math"
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		name string
		in   int64
		want string
	}{
		{"zero is bytes", 0, "0 B"},
		{"below a KiB stays in bytes", 1023, "1023 B"},
		{"a KiB has one decimal", 1024, "1.0 KiB"},
		{"a fraction rounds to one decimal", 1536, "1.5 KiB"},
		{"GiB", 10 << 30, "10.0 GiB"},
		{"a negative count keeps its sign", -2048, "-2.0 KiB"},
		{"the least int64 does not overflow", math.MinInt64, "-8.0 EiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Bytes(tt.in); got != tt.want {
				t.Errorf("Bytes(%d) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got := Size(5 << 30); got != "5.0 GiB" {
		t.Errorf("Size(5 GiB) = %q", got)
	}
}

func TestDurationAndAgo(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{"zero", 0, "0s"},
		{"under half a second rounds to 0s", 499 * time.Millisecond, "0s"},
		{"seconds", 45 * time.Second, "45s"},
		{"minutes keep their seconds unpadded", 12*time.Minute + 5*time.Second, "12m5s"},
		{"hours drop the seconds", 3*time.Hour + 10*time.Minute + 59*time.Second, "3h10m"},
		{"days keep their hours", 52 * time.Hour, "2d4h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Duration(tt.d); got != tt.want {
				t.Errorf("Duration(%s) = %q, want %q", tt.d, got, tt.want)
			}
			if got := Ago(now.Add(-tt.d), now); got != tt.want+" ago" {
				t.Errorf("Ago(now-%s) = %q, want %q", tt.d, got, tt.want+" ago")
			}
		})
	}
	if got := Ago(now.Add(5*time.Minute), now); got != "in 5m0s" {
		t.Errorf("Ago of a future time = %q, want in 5m0s", got)
	}
	if got := Ago(time.Time{}, now); got != "never" {
		t.Errorf("Ago(zero) = %q, want never", got)
	}
	if got := In(now.Add(70*time.Second), now); got != "in 1m10s" {
		t.Errorf("In = %q, want in 1m10s", got)
	}
	if got := In(now, now); got != "now" {
		t.Errorf("In(now) = %q, want now", got)
	}
}

func TestShortIDAndNames(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sha256:0123456789abcdef0123", "0123456789ab"},
		{"sha512:0123456789abcdef0123", "0123456789ab"},
		{"abc", "abc"},
	}
	for _, tt := range tests {
		if got := ShortID(tt.in); got != tt.want {
			t.Errorf("ShortID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := ImageName([]string{"web:1", "web:latest"}, nil); got != "web:1 (+1)" {
		t.Errorf("ImageName with two tags = %q", got)
	}
	if got := ImageName(nil, []string{"ghcr.io/acme/new@sha256:1234567890abcdef"}); got != "ghcr.io/acme/new@1234567890ab" {
		t.Errorf("ImageName by digest = %q", got)
	}
	if got := ImageName(nil, nil); got != "<none>" {
		t.Errorf("ImageName of nothing = %q", got)
	}
	if got := Percent(0.424); got != "42%" {
		t.Errorf("Percent(0.424) = %q", got)
	}
	if got := Plural(2, "sandbox"); got != "2 sandboxes" {
		t.Errorf("Plural = %q", got)
	}
}

func TestNextChange(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		now  time.Duration // after at (negative: before)
	}{
		{"an age in seconds", 12*time.Second + 200*time.Millisecond},
		{"an age on a half second", 12*time.Second + 500*time.Millisecond},
		{"an age in minutes and seconds", 5*time.Minute + 3*time.Second},
		{"an age in hours and minutes", 2*time.Hour + 7*time.Minute + 10*time.Second},
		{"an age just under an hour", 59*time.Minute + 59*time.Second + 600*time.Millisecond},
		{"an age in days", 50*time.Hour + 20*time.Minute},
		{"a countdown in seconds", -(34*time.Second + 100*time.Millisecond)},
		{"a countdown under half a second", -300 * time.Millisecond},
		{"a countdown in hours", -(3*time.Hour + 30*time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at.Add(tt.now)
			checkNextChange(t, at, now, NextChange(at, now), func(n time.Time) string { return Ago(at, n) })
		})
	}
	if !NextChange(time.Time{}, at).IsZero() {
		t.Error("the zero time must give the zero time")
	}
}

func TestRough(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		d       time.Duration // now - at
		ago, in string
	}{
		{0, "<1m ago", "now"},
		{59*time.Second + 999*time.Millisecond, "<1m ago", "now"},
		{-59 * time.Second, "in <1m", "in <1m"},
		{time.Minute, "1m ago", "now"},
		{-(4*time.Minute + 59*time.Second), "in 4m", "in 4m"},
		{time.Hour + 5*time.Minute + 59*time.Second, "1h5m ago", "now"},
		{50*time.Hour + 59*time.Minute, "2d2h ago", "now"},
	}
	for _, tt := range tests {
		now := at.Add(tt.d)
		if got := RoughAgo(at, now); got != tt.ago {
			t.Errorf("RoughAgo at %s = %q, want %q", tt.d, got, tt.ago)
		}
		if got := RoughIn(at, now); got != tt.in {
			t.Errorf("RoughIn at %s = %q, want %q", tt.d, got, tt.in)
		}
	}
	if RoughAgo(time.Time{}, at) != "never" || RoughIn(time.Time{}, at) != "-" {
		t.Error("the zero time must read never / -")
	}
}

func TestRoughNextChange(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		now  time.Duration // after at (negative: before)
	}{
		{"an age under a minute", 12*time.Second + 200*time.Millisecond},
		{"an age of a whole minute", time.Minute},
		{"an age in hours and minutes", 2*time.Hour + 7*time.Minute + 10*time.Second},
		{"an age just under a day", 23*time.Hour + 59*time.Minute + 30*time.Second},
		{"an age in days", 50*time.Hour + 20*time.Minute},
		{"a countdown under a minute", -(34*time.Second + 100*time.Millisecond)},
		{"a countdown of a whole minute", -4 * time.Minute},
		{"a countdown in minutes", -(4*time.Minute + 12*time.Second)},
		{"a countdown just over a day", -(24*time.Hour + 30*time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at.Add(tt.now)
			checkNextChange(t, at, now, RoughNextChange(at, now), func(n time.Time) string { return RoughAgo(at, n) + "|" + RoughIn(at, n) })
		})
	}
	if !RoughNextChange(time.Time{}, at).IsZero() {
		t.Error("the zero time must give the zero time")
	}
}

// checkNextChange checks next, said to be the first instant after now at
// which show reads differently: nothing changes before it, and it changes
// at it.
func checkNextChange(t *testing.T, at, now, next time.Time, show func(time.Time) string) {
	t.Helper()
	if !next.After(now) {
		t.Fatalf("next change %s, not after now %s", next.Sub(at), now.Sub(at))
	}
	for p := now; p.Before(next); p = p.Add(max(next.Sub(now)/50, time.Millisecond)) {
		if show(p) != show(now) {
			t.Fatalf("changed at %s (%q → %q), before the next change %s", p.Sub(at), show(now), show(p), next.Sub(at))
		}
	}
	if show(next) == show(now) {
		t.Fatalf("no change at the next change %s: still %q", next.Sub(at), show(next))
	}
}
