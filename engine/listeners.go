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

// Subscribers is a set of channels, each sent every value published: the
// scheduler's notices, and the dashboard's view of an attached agent's.
// A subscriber that falls behind loses its oldest values (SendNewest)
// and never blocks the publisher. The zero value is ready to use.
type Subscribers[T any] struct {
	mu   sync.Mutex
	chs  map[int]chan T
	next int
}

// Subscribe returns a channel of the values published from now on,
// buffered for buffer of them, and a func that unsubscribes and closes
// it.
func (s *Subscribers[T]) Subscribe(buffer int) (<-chan T, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chs == nil {
		s.chs = map[int]chan T{}
	}
	id := s.next
	s.next++
	ch := make(chan T, buffer)
	s.chs[id] = ch
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c, ok := s.chs[id]; ok {
			delete(s.chs, id)
			close(c)
		}
	}
}

// Publish sends v to every subscriber without blocking (SendNewest).
func (s *Subscribers[T]) Publish(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.chs {
		SendNewest(ch, v)
	}
}
