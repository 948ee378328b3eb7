package nodeevents

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"golang.org/x/time/rate"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The series' times, client-go's (tools/events/event_broadcaster.go): a
// series ends when no repeat came for seriesFinish, and one that goes on
// is written again every seriesRefresh.
const (
	seriesFinish  = 6 * time.Minute
	seriesRefresh = 30 * time.Minute
)

// The bound on new event objects, the kubelet's: its recorder's
// correlator (client-go tools/record/events_cache.go, NewEventCorrelator,
// as the kubelet v1.36.3 builds it in cmd/kubelet/app/server.go
// makeEventRecorder) lets 25 events about one object through at once,
// then one every 5 minutes.
const (
	spamBurst = 25
	spamEvery = 5 * time.Minute
)

// seriesKey is what makes two events the same series: client-go's
// isomorphic key (getKey), less what is the same for every event of one
// recorder (controller, instance, the Node).
type seriesKey struct{ typ, reason, action string }

// entry is one event object sent, and its repeats.
type entry struct {
	ev *eventsv1.Event
	// count is how many times it happened; sent how many the API
	// server has (1 before the event has a series).
	count, sent int32
	// last is when it last happened; sentAt when it was last written.
	last, sentAt time.Time
}

// write is one request: create ev, or patch its series.
type write struct {
	create bool
	ev     *eventsv1.Event
	patch  []byte
}

// correlator turns events into writes as client-go's events recorder
// does (tools/events): the first of a series is created; the first
// repeat within seriesFinish patches the event's series (count 2) at
// once; later repeats only count, and the count is written when the
// series ends or every seriesRefresh while it goes on. So a node makes
// at most one event object per reason and action in a window, and a
// repeat costs a write only now and then. Unlike client-go, a series
// whose count did not change is not written again. It is not safe for
// concurrent use: the recorder's one goroutine owns it.
type correlator struct {
	cache map[seriesKey]*entry
	spam  *rate.Limiter
}

// newCorrelator returns a correlator with nothing seen.
func newCorrelator() *correlator {
	return &correlator{cache: map[seriesKey]*entry{}, spam: rate.NewLimiter(rate.Every(spamEvery), spamBurst)}
}

// observe returns the write ev calls for at now, if any; build makes the
// event object of a new series. dropped reports an event the spam bound
// refused.
func (c *correlator) observe(ev Event, now time.Time, build func(Event, time.Time) *eventsv1.Event) (w write, ok, dropped bool) {
	k := seriesKey{ev.Type, ev.Reason, ev.Action}
	if e := c.cache[k]; e != nil {
		e.count++
		e.last = now
		if e.sent > 1 {
			return write{}, false, false
		}
		return c.patch(e, now), true, false
	}
	if !c.spam.AllowN(now, 1) {
		return write{}, false, true
	}
	obj := build(ev, now)
	c.cache[k] = &entry{ev: obj, count: 1, sent: 1, last: now, sentAt: now}
	return write{create: true, ev: obj}, true, false
}

// tick returns the writes due at now, in a stable order: the counts of
// the series that ended or are due a refresh; it forgets what ended.
func (c *correlator) tick(now time.Time) []write {
	var out []write
	for k, e := range c.cache {
		ended := now.Sub(e.last) >= seriesFinish
		if e.count > e.sent && (ended || now.Sub(e.sentAt) >= seriesRefresh) {
			out = append(out, c.patch(e, now))
		}
		if ended {
			delete(c.cache, k)
		}
	}
	slices.SortFunc(out, func(a, b write) int { return cmp.Compare(a.ev.Name, b.ev.Name) })
	return out
}

// flush returns the writes of every count not yet sent: at the stop.
func (c *correlator) flush(now time.Time) []write {
	var out []write
	for _, e := range c.cache {
		if e.count > e.sent {
			out = append(out, c.patch(e, now))
		}
	}
	clear(c.cache)
	slices.SortFunc(out, func(a, b write) int { return cmp.Compare(a.ev.Name, b.ev.Name) })
	return out
}

// patch is the write of e's series as it stands: client-go's patch of
// the series alone (createPatchBytesForSeries), on a copy of the event
// that carries it in case the event must be created again.
func (c *correlator) patch(e *entry, now time.Time) write {
	series := &eventsv1.EventSeries{Count: e.count, LastObservedTime: metav1.NewMicroTime(e.last)}
	e.sent, e.sentAt = e.count, now
	ev := e.ev.DeepCopy()
	ev.Series = series
	b, _ := json.Marshal(map[string]any{"series": series}) // cannot fail: two plain fields
	return write{ev: ev, patch: b}
}
