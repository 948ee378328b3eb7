package engine

import "sync"

// listeners is a set of funcs told of each value published, from any
// goroutine; they must not block.
type listeners[T any] struct {
	mu   sync.Mutex
	fns  map[int]func(T)
	next int
}

// add registers fn and returns a func that unregisters it.
func (l *listeners[T]) add(fn func(T)) (cancel func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fns == nil {
		l.fns = map[int]func(T){}
	}
	id := l.next
	l.next++
	l.fns[id] = fn
	return func() {
		l.mu.Lock()
		delete(l.fns, id)
		l.mu.Unlock()
	}
}

// publish calls every listener with v.
func (l *listeners[T]) publish(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fn := range l.fns {
		fn(v)
	}
}
