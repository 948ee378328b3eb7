package format

import (
	"strconv"
	"strings"
	"time"
)

// Bytes formats a byte count in IEC units with one decimal: "512 B",
// "1.5 KiB", "23.4 MiB", "120.0 GiB". Negative counts keep their sign.
func Bytes(n int64) string { return string(AppendBytes(nil, n)) }

// AppendBytes appends Bytes(n) to dst, for tables of many rows.
func AppendBytes(dst []byte, n int64) []byte {
	size := uint64(n) // the magnitude: -n overflows for the least int64
	if n < 0 {
		dst = append(dst, '-')
		size = -size
	}
	return appendSize(dst, size)
}

// Size is Bytes for an unsigned count (cgroup counters).
func Size(n uint64) string { return string(appendSize(nil, n)) }

func appendSize(dst []byte, size uint64) []byte {
	if size < 1024 {
		return append(strconv.AppendUint(dst, size, 10), " B"...)
	}
	units := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(size) / 1024
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	dst = strconv.AppendFloat(dst, v, 'f', 1, 64)
	return append(append(dst, ' '), units[u]...)
}

// Duration keeps the two largest units of d, rounded to the second: "0s",
// "45s", "12m5s", "3h10m", "2d4h". A negative duration is formatted as
// its magnitude; Ago and In say which side of now it lies.
func Duration(d time.Duration) string { return string(AppendDuration(nil, d)) }

// AppendDuration appends Duration(d) to dst.
func AppendDuration(dst []byte, d time.Duration) []byte {
	if d < 0 {
		d = -d
	}
	d = d.Round(time.Second)
	units := [...]struct {
		size time.Duration
		name byte
	}{{24 * time.Hour, 'd'}, {time.Hour, 'h'}, {time.Minute, 'm'}, {time.Second, 's'}}
	for i, u := range units[:len(units)-1] {
		if d >= u.size {
			next := units[i+1]
			dst = append(strconv.AppendInt(dst, int64(d/u.size), 10), u.name)
			return append(strconv.AppendInt(dst, int64(d%u.size/next.size), 10), next.name)
		}
	}
	return append(strconv.AppendInt(dst, int64(d/time.Second), 10), 's')
}

// NextChange is the first instant after now at which Duration of the
// time between at and the clock changes, so that Ago(at, ·) and In(at, ·)
// read differently: the next second below an hour, the next minute below a
// day, the next hour beyond (Duration keeps two units, rounded to the
// second). A countdown ends at at itself. The zero time gives the zero
// time: nothing shown moves.
func NextChange(at, now time.Time) time.Time {
	if at.IsZero() {
		return time.Time{}
	}
	const half = time.Second / 2
	if d := now.Sub(at); d >= 0 {
		dr := d.Round(time.Second)
		r := resolution(dr)
		return at.Add((dr/r+1)*r - half)
	}
	dr := at.Sub(now).Round(time.Second)
	r := resolution(dr)
	edge := (dr/r)*r - half
	if edge <= 0 {
		return at
	}
	return at.Add(-edge + 1)
}

// resolution is the smallest unit Duration shows of d (rounded to the
// second).
func resolution(d time.Duration) time.Duration {
	switch {
	case d >= 24*time.Hour:
		return time.Hour
	case d >= time.Hour:
		return time.Minute
	}
	return time.Second
}

// Ago formats t relative to now: "3h10m ago", or "in 5m" for a t after
// now; the zero time is "never".
func Ago(t, now time.Time) string { return string(AppendAgo(nil, t, now)) }

// AppendAgo appends Ago(t, now) to dst.
func AppendAgo(dst []byte, t, now time.Time) []byte {
	if t.IsZero() {
		return append(dst, "never"...)
	}
	d := now.Sub(t)
	if d < 0 {
		return AppendDuration(append(dst, "in "...), -d)
	}
	return append(AppendDuration(dst, d), " ago"...)
}

// In formats how long after now t is: "in 1m10s", "now" when it is due,
// and "-" for the zero time (nothing scheduled).
func In(t, now time.Time) string { return in(t, now, Duration) }

// in is In with the duration spelled by f.
func in(t, now time.Time, f func(time.Duration) string) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	if d <= 0 {
		return "now"
	}
	return "in " + f(d)
}

// ShortID is an ID as crictl shows it: without its algorithm
// ("sha256:"), cut to 12 characters.
func ShortID(id string) string {
	if i := strings.IndexByte(id, ':'); i >= 0 {
		id = id[i+1:]
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Percent formats a fraction in [0,1] as a whole percentage: "42%".
func Percent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', 0, 64) + "%"
}

// Time formats an instant for a table: UTC, RFC 3339, to the second;
// the zero time is "(unknown)".
func Time(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339)
}

// Plural is n and the noun, in the plural unless n is 1: "1 image",
// "3 images", "2 sandboxes".
func Plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	switch {
	case n == 1:
		return s
	case strings.HasSuffix(noun, "x"):
		return s + "es"
	}
	return s + "s"
}

// ImageName is an image's display name: its first tag with a count of the
// others ("web:1 (+1)"), else its first digest with the digest shortened
// ("ghcr.io/acme/app@1234567890ab"), else "<none>".
func ImageName(tags, digests []string) string {
	switch {
	case len(tags) > 1:
		return tags[0] + " (+" + strconv.Itoa(len(tags)-1) + ")"
	case len(tags) == 1:
		return tags[0]
	case len(digests) > 0:
		d := digests[0]
		if at := strings.Index(d, "@"); at >= 0 {
			return d[:at] + "@" + ShortID(d[at+1:])
		}
		return d
	}
	return "<none>"
}

// Rough is d to the whole minute, truncated, for a line that should move
// once a minute rather than once a second: "<1m", "4m", "1h5m", "2d4h".
// Each screen that shows a rough duration shows the instant itself beside
// it (Time), so no precision is lost; an idle dashboard then draws one
// frame a minute for it instead of sixty (issue 22). A negative d is
// formatted as its magnitude.
func Rough(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Minute:
		return "<1m"
	case d < time.Hour:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return Duration(d.Truncate(roughResolution(d)))
}

// RoughAgo is Ago at Rough's resolution: "<1m ago", "4m ago", "in 4m"
// for a t after now, "never" for the zero time.
func RoughAgo(t, now time.Time) string {
	switch d := now.Sub(t); {
	case t.IsZero():
		return "never"
	case d < 0:
		return "in " + Rough(d)
	default:
		return Rough(d) + " ago"
	}
}

// RoughIn is In at Rough's resolution: "in <1m", "in 4m", "now" when it
// is due, "-" for the zero time.
func RoughIn(t, now time.Time) string { return in(t, now, Rough) }

// RoughNextChange is the first instant after now at which RoughAgo(at, ·)
// and RoughIn(at, ·) read differently: the next whole minute of the age
// or the countdown below a day, the next whole hour beyond. A countdown
// ends at at itself ("now"). The zero time gives the zero time.
func RoughNextChange(at, now time.Time) time.Time {
	if at.IsZero() {
		return time.Time{}
	}
	if d := now.Sub(at); d >= 0 {
		r := roughResolution(d)
		return at.Add((d/r + 1) * r)
	}
	d := at.Sub(now)
	r := roughResolution(d)
	// The countdown reads k units until fewer than k*r are left.
	if k := d / r; k > 0 {
		return at.Add(-k*r + 1)
	}
	return at
}

// roughResolution is the smallest unit Rough shows of d.
func roughResolution(d time.Duration) time.Duration {
	if d >= 24*time.Hour {
		return time.Hour
	}
	return time.Minute
}
