package human

import (
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		name string
		in   int64
		want string
	}{
		{"bytes below one KiB stay in bytes", 512, "512 B"},
		{"one and a half KiB has two decimals", 1536, "1.50 KiB"},
		{"tens of MiB have one decimal", 23*1024*1024 + 400*1024, "23.4 MiB"},
		{"hundreds of GiB have none", 120 << 30, "120 GiB"},
		{"negative sizes keep their sign", -2048, "-2.00 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Bytes(tt.in); got != tt.want {
				t.Errorf("Bytes(%d) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		name string
		in   time.Duration
		want string
	}{
		{"seconds alone", 45 * time.Second, "45s"},
		{"minutes and seconds", 70 * time.Second, "1m10s"},
		{"whole minutes drop the seconds", 2 * time.Minute, "2m"},
		{"hours and minutes", 3*time.Hour + 5*time.Minute + 9*time.Second, "3h05m"},
		{"days and hours", 52 * time.Hour, "2d04h"},
		{"negative is zero", -time.Second, "0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Duration(tt.in); got != tt.want {
				t.Errorf("Duration(%s) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestShortID(t *testing.T) {
	if got := ShortID("sha256:0123456789abcdef0123"); got != "0123456789ab" {
		t.Errorf("ShortID strips sha256: and keeps 12, got %q", got)
	}
	if got := ShortID("abc"); got != "abc" {
		t.Errorf("ShortID keeps short IDs, got %q", got)
	}
}
