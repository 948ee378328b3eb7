// Package human formats sizes, durations and times for the dashboard, in a
// few fixed-width, deterministic forms.
package human

import (
	"fmt"
	"time"
)

// Bytes formats n in binary units with three significant digits: "512 B",
// "1.5 KiB", "23.4 MiB", "120 GiB".
func Bytes(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	sign := ""
	if neg {
		sign = "-"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%s%d B", sign, n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n)
	i := -1
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	switch {
	case v >= 100:
		return fmt.Sprintf("%s%.0f %s", sign, v, units[i])
	case v >= 10:
		return fmt.Sprintf("%s%.1f %s", sign, v, units[i])
	default:
		return fmt.Sprintf("%s%.2f %s", sign, v, units[i])
	}
}

// Duration formats d compactly with at most two units: "45s", "1m10s",
// "3h05m", "2d04h". Negative durations are shown as 0s.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Second {
		if d == 0 {
			return "0s"
		}
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, (s%86400)/3600)
	}
}

// Ago formats how long before now t was: "5m10s ago"; the zero time is
// "never".
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return Duration(now.Sub(t)) + " ago"
}

// In formats how long after now t is: "in 1m10s", or "now" when it is due.
func In(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := t.Sub(now)
	if d <= 0 {
		return "now"
	}
	return "in " + Duration(d)
}

// ShortID strips a "sha256:" prefix and keeps 12 characters, as crictl does.
func ShortID(id string) string {
	if len(id) > 7 && id[:7] == "sha256:" {
		id = id[7:]
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Percent formats a fraction in [0,1] as "42%".
func Percent(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }
