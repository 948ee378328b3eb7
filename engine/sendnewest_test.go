package engine

import "testing"

func TestSendNewestKeepsTheLastValueOfAFullChannel(t *testing.T) {
	ch := make(chan int, 3)
	for v := 1; v <= 5; v++ {
		SendNewest(ch, v)
	}
	close(ch)
	var got []int
	for v := range ch {
		got = append(got, v)
	}
	if len(got) != 3 || got[0] != 3 || got[2] != 5 {
		t.Errorf("a subscriber that fell behind reads %v, want [3 4 5]: the oldest go, the newest stays", got)
	}
}

func TestSubscribersHandEachValueToEverySubscriberUntilItLeaves(t *testing.T) {
	var s Subscribers[int]
	a, leaveA := s.Subscribe(2)
	b, leaveB := s.Subscribe(2)
	defer leaveB()
	s.Publish(1)
	leaveA()
	leaveA() // a second call is harmless
	s.Publish(2)
	s.Publish(3) // b's buffer of 2 keeps the newest
	var gotA []int
	for v := range a { // closed by leaveA
		gotA = append(gotA, v)
	}
	if len(gotA) != 1 || gotA[0] != 1 {
		t.Errorf("the subscriber that left read %v, want [1]", gotA)
	}
	if v1, v2 := <-b, <-b; v1 != 2 || v2 != 3 {
		t.Errorf("the subscriber that stayed read %d, %d, want 2, 3", v1, v2)
	}
}
