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
