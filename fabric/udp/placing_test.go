//go:build linux

package udp

import (
	"bytes"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// pollAll polls p until it has returned n datagrams (copies), failing
// after a few seconds.
func pollAll(t *testing.T, p *Port, n int) [][]byte {
	t.Helper()
	msgs := make([][]byte, p.BatchSize())
	var got [][]byte
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < n {
		k, err := p.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:k] {
			got = append(got, bytes.Clone(m))
		}
		if k == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d datagrams received", len(got), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return got
}

// The bodies of the datagrams a port was told to expect land in the
// memory named for them, and the port returns their heads alone; a
// datagram that is not the one expected (another head, another length)
// comes back whole, as does one beyond the expectations. The expectations
// serve one receive; once withdrawn, the memory named is not written.
func TestExpect(t *testing.T) {
	// Datagrams coalesced by GSO would come as one GRO buffer, never
	// received in place.
	a := listen(t, "127.0.0.1:0", Config{DisableGSO: true})
	b := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, b)
	const head = 8
	regions := [][]byte{make([]byte, 16), make([]byte, 16), make([]byte, 16), make([]byte, 16)}
	var asked []int
	fits := func(i int, dg []byte, n int) bool {
		asked = append(asked, i)
		return len(dg) == head && dg[0] == 'Y'
	}
	dgs := []fabric.Datagram{
		{Head: []byte("Y-head-0"), Body: bytes.Repeat([]byte{1}, 16), To: to}, // expected
		{Head: []byte("N-head-1"), Body: bytes.Repeat([]byte{2}, 16), To: to}, // another head
		{Head: []byte("Y-head-2"), Body: bytes.Repeat([]byte{3}, 30), To: to}, // longer
		{Head: []byte("Y-head-3"), Body: bytes.Repeat([]byte{4}, 5), To: to},  // shorter
		{Head: []byte("Y-head-4"), Body: bytes.Repeat([]byte{5}, 16), To: to}, // one more than expected
		{Head: []byte("Y-head-5"), Body: bytes.Repeat([]byte{6}, 16), To: to}, // left for the next receive
	}
	b.Expect(head, regions, fits)
	if _, err := a.Send(dgs); err != nil {
		t.Fatal(err)
	}
	got := pollAll(t, b, len(dgs))
	for i, d := range dgs {
		want := joined(d)
		if i == 0 {
			want = d.Head
			if !bytes.Equal(regions[0], d.Body) {
				t.Errorf("region 0 holds %v, want the body of the datagram expected", regions[0])
			}
		}
		if !bytes.Equal(got[i], want) {
			t.Errorf("datagram %d: got %q, want %q", i, got[i], want)
		}
	}
	if s := b.Stats(); s.Placed != 1 || s.Misplaced != 3 {
		t.Errorf("placed %d, misplaced %d; want 1 and 3", s.Placed, s.Misplaced)
	}
	if len(asked) != 2 {
		t.Errorf("fits asked about regions %v, want the two datagrams of the expected length", asked)
	}

	// Withdrawn expectations write nowhere.
	clear(regions[0])
	b.Expect(head, regions[:1], fits)
	b.Expect(0, nil, nil)
	if _, err := a.Send(dgs[:1]); err != nil {
		t.Fatal(err)
	}
	if got := pollAll(t, b, 1); !bytes.Equal(got[0], joined(dgs[0])) || !bytes.Equal(regions[0], make([]byte, 16)) {
		t.Errorf("after withdrawal: got %q, region %v", got[0], regions[0])
	}

	// A Wait (which sleeps in the kernel) receives with them too.
	b.Expect(head, regions[:1], fits)
	waitInPlace(t, a, b, dgs[0], regions[0])
}

// A port asked to lead shows the caller the head of the next datagram
// before receiving it, once; the expectations the caller makes then are
// used for that datagram, and a receive with expectations ends at the
// last one expected. Lead(nil) takes the lead back.
func TestLead(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{DisableGSO: true})
	b := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, b)
	const head = 8
	regions := [][]byte{make([]byte, 16), make([]byte, 16)}
	fits := func(i int, dg []byte, n int) bool { return len(dg) == head && dg[0] == 'Y' }
	var shown []string
	var lens []int
	lead := func(dg []byte, n int) {
		shown = append(shown, string(dg[:min(len(dg), head)]))
		lens = append(lens, n)
		b.Expect(head, regions[:1], fits)
	}
	dgs := []fabric.Datagram{
		{Head: []byte("Y-head-0"), Body: bytes.Repeat([]byte{1}, 16), To: to}, // shown, then expected
		{Head: []byte("Y-head-1"), Body: bytes.Repeat([]byte{2}, 16), To: to}, // not taken with it
		{Head: []byte("Y-head-2"), Body: bytes.Repeat([]byte{3}, 16), To: to}, // no lead left
	}
	b.Lead(lead)
	if _, err := a.Send(dgs); err != nil {
		t.Fatal(err)
	}
	msgs := make([][]byte, b.BatchSize())
	var got [][]byte
	for deadline := time.Now().Add(5 * time.Second); len(got) == 0; {
		n, err := b.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			got = append(got, bytes.Clone(m))
		}
		if n == 0 && time.Now().After(deadline) {
			t.Fatal("nothing received")
		}
	}
	if len(got) != 1 || !bytes.Equal(got[0], dgs[0].Head) || !bytes.Equal(regions[0], dgs[0].Body) {
		t.Fatalf("the receive after the lead: %q, region %v; want the first head alone, its body in place", got, regions[0])
	}
	if len(shown) != 1 || shown[0] != "Y-head-0" || lens[0] != head+16 {
		t.Fatalf("shown %q (lengths %v), want the first head once, with its length", shown, lens)
	}
	rest := pollAll(t, b, 2)
	for i, d := range dgs[1:] {
		if !bytes.Equal(rest[i], joined(d)) {
			t.Errorf("datagram %d: got %q, want it whole", i+1, rest[i])
		}
	}
	if len(shown) != 1 {
		t.Errorf("lead called %d times, want once", len(shown))
	}

	// Taken back, it is not called.
	b.Lead(lead)
	b.Lead(nil)
	if _, err := a.Send(dgs[:1]); err != nil {
		t.Fatal(err)
	}
	if got := pollAll(t, b, 1); !bytes.Equal(got[0], joined(dgs[0])) || len(shown) != 1 {
		t.Errorf("after Lead(nil): got %q, lead called %d times", got[0], len(shown))
	}

	// A Wait (which sleeps in the kernel) leads too.
	clear(regions[0])
	b.Lead(lead)
	waitInPlace(t, a, b, dgs[0], regions[0])
	if len(shown) != 2 {
		t.Errorf("lead called %d times in all, want twice", len(shown))
	}
}

// waitInPlace sends dg from a while b sleeps in Wait, and checks that the
// Wait returns dg's head alone with its body in region.
func waitInPlace(t *testing.T, a, b *Port, dg fabric.Datagram, region []byte) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		msgs := make([][]byte, b.BatchSize())
		for {
			n, err := b.Wait(msgs, time.Now().Add(5*time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			if n > 0 {
				if !bytes.Equal(msgs[0], dg.Head) || !bytes.Equal(region, dg.Body) {
					t.Errorf("Wait: got %q, region %v", msgs[0], region)
				}
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond) // most often asleep by now
	if _, err := a.Send([]fabric.Datagram{dg}); err != nil {
		t.Fatal(err)
	}
	<-done
}
