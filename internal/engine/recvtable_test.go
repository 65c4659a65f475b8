package engine

import (
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/internal/wire"
)

func newTestTable(buckets int) (*recvTable, *mcbPool) {
	pool := newMCBPool(16)
	return newRecvTable(pool, buckets), pool
}

func arrive(t *recvTable, pool *mcbPool, k key, id uint64) *Request {
	m := pool.get()
	m.key, m.msgID = k, id
	s := t.stripe(k.dstThread)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := hashKey(k)
	if r := t.takePosted(s, k, h); r != nil {
		pool.put(m)
		return r
	}
	t.enqueue(s, m, h)
	return nil
}

func post(t *recvTable, r *Request) *mcb {
	s := t.stripe(r.dstThread)
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.post(s, r)
}

func TestTableSameKeyFIFO(t *testing.T) {
	// Two buckets force collisions between keys.
	tab, pool := newTestTable(2)
	k := key{1, 2, 3, 4}
	other := key{1, 2, 3, 5}
	for i := uint64(0); i < 5; i++ {
		arrive(tab, pool, k, i)
		arrive(tab, pool, other, 100+i)
	}
	for i := uint64(0); i < 5; i++ {
		m := post(tab, &Request{dstThread: 3, srcProc: 1, srcThread: 2, tag: 4})
		if m == nil || m.msgID != i {
			t.Fatalf("want message %d, got %+v", i, m)
		}
		pool.put(m)
	}
	// Wildcard tag takes the remaining ones in arrival order.
	for i := uint64(0); i < 5; i++ {
		m := post(tab, &Request{dstThread: 3, srcProc: AnyProc, srcThread: AnyThread, tag: AnyTag})
		if m == nil || m.msgID != 100+i {
			t.Fatalf("wildcard: want %d, got %+v", 100+i, m)
		}
		pool.put(m)
	}
	if pool.inUse() != 0 {
		t.Fatalf("%d blocks in use", pool.inUse())
	}
}

func TestTablePostedOrder(t *testing.T) {
	tab, pool := newTestTable(64)
	exact := &Request{dstThread: 7, srcProc: 1, srcThread: 1, tag: 1}
	wild := &Request{dstThread: 7, srcProc: AnyProc, srcThread: AnyThread, tag: 1}
	exact2 := &Request{dstThread: 7, srcProc: 1, srcThread: 1, tag: 1}
	for _, r := range []*Request{exact, wild, exact2} {
		if post(tab, r) != nil {
			t.Fatal("nothing should match yet")
		}
	}
	k := key{1, 1, 7, 1}
	if r := arrive(tab, pool, k, 0); r != exact {
		t.Fatal("first arrival should match the first posted receive")
	}
	if r := arrive(tab, pool, k, 1); r != wild {
		t.Fatal("second arrival should match the wildcard posted before exact2")
	}
	if r := arrive(tab, pool, k, 2); r != exact2 {
		t.Fatal("third arrival should match exact2")
	}
	// Other destination threads and tags do not match.
	if r := arrive(tab, pool, key{1, 1, 8, 1}, 3); r != nil {
		t.Fatal("matched another thread's receive")
	}
	u := &Request{dstThread: 7, srcProc: AnyProc, srcThread: AnyThread, tag: 2}
	post(tab, u)
	if !func() bool { s := tab.stripe(7); s.mu.Lock(); defer s.mu.Unlock(); return tab.unpost(s, u) }() {
		t.Fatal("unpost failed")
	}
}

func TestMCBPoolExhaustion(t *testing.T) {
	pool := newMCBPool(2)
	a, b := pool.get(), pool.get()
	if a == nil || b == nil || pool.get() != nil {
		t.Fatal("pool capacity not enforced")
	}
	pool.put(a)
	if pool.get() == nil {
		t.Fatal("freed block not reusable")
	}
}

// TestMCBPoolTakesCleared: a block put back with a message's state is
// taken again (from the blocks put back) with none of it, and the blocks
// put back count as free.
func TestMCBPoolTakesCleared(t *testing.T) {
	var bp bufPool
	pool := newMCBPool(4)
	var taken []*mcb
	for range 4 {
		m := pool.get()
		m.key, m.msgID, m.reserved = key{srcProc: 3, tag: 9}, 77, 64
		m.start(64, 64, 1, &bp)
		m.place(0, make([]byte, 64))
		m.owner = &Request{}
		taken = append(taken, m)
	}
	for _, m := range taken {
		pool.put(m)
	}
	if n := pool.inUse(); n != 0 {
		t.Fatalf("%d blocks in use after all were put back", n)
	}
	for range 4 {
		m := pool.get()
		if m == nil {
			t.Fatal("a block put back was not taken again")
		}
		if m.key != (key{}) || m.msgID != 0 || m.reserved != 0 || m.total != 0 || m.got != 0 || m.owner != nil ||
			m.data != nil || m.hnext != nilMCB || m.tprev != nilMCB || m.tnext != nilMCB {
			t.Fatalf("block %d taken with its last message's state: %+v", m.idx, *m)
		}
		m.start(64, 64, 1, &bp)
		if m.hasFrag(0) {
			t.Fatalf("block %d taken with its last message's fragment marked", m.idx)
		}
	}
}

func TestReassemblyBitmapAndChunks(t *testing.T) {
	var bp bufPool
	m := &mcb{}
	const frag = 1000
	total := uint64(3*chunkSize + 123)
	nfrag := uint32((total + frag - 1) / frag)
	m.start(total, frag, nfrag, &bp)
	if m.data != nil {
		t.Fatal("large message allocated whole before data arrived")
	}
	data := pattern(int(total), 3)
	// Deliver in reverse order; storage grows chunk by chunk.
	for i := int(nfrag) - 1; i >= 0; i-- {
		off := i * frag
		end := off + frag
		if end > int(total) {
			end = int(total)
		}
		done := m.place(uint32(i), data[off:end])
		chunks := 0
		for _, c := range m.chunks {
			if c != nil {
				chunks++
			}
		}
		if want := (int(m.gotBytes) + chunkSize - 1) / chunkSize; chunks > want+1 {
			t.Fatalf("%d chunks for %d bytes arrived", chunks, m.gotBytes)
		}
		if done != (i == 0) {
			t.Fatalf("completion at %d", i)
		}
		if !m.hasFrag(uint32(i)) {
			t.Fatal("bitmap not set")
		}
	}
	half := make([]byte, total/2)
	if m.copyTo(half) != len(half) || string(half) != string(data[:len(half)]) {
		t.Fatal("copy into a short buffer differs")
	}
	if string(m.bytes()) != string(data) {
		t.Fatal("reassembled data differs")
	}
}

func TestRxStreamWindowAndSack(t *testing.T) {
	var rx rxStream
	rx.init(128)
	for _, s := range []uint64{0, 1, 3, 4, 7, 70, 71} {
		rx.mark(s)
	}
	if rx.cum != 2 {
		t.Fatalf("cum %d", rx.cum)
	}
	var a ackBodyForTest
	rx.ack(&a.AckBody)
	want := [][2]uint64{{3, 5}, {7, 8}, {70, 72}}
	if int(a.NSack) != len(want) {
		t.Fatalf("blocks %+v", a.Sack[:a.NSack])
	}
	for i, w := range want {
		if a.Sack[i].Start != w[0] || a.Sack[i].End != w[1] {
			t.Fatalf("block %d = %+v, want %v", i, a.Sack[i], w)
		}
	}
	rx.mark(2)
	rx.mark(5)
	rx.mark(6)
	if rx.cum != 8 {
		t.Fatalf("cum %d after filling", rx.cum)
	}
	for s := uint64(8); s < 70; s++ {
		rx.mark(s)
	}
	if rx.cum != 72 || rx.has(200) {
		t.Fatalf("cum %d", rx.cum)
	}
	// Ring reuse: seqs one window later must read as not arrived.
	if rx.has(72+128-1) || !rx.has(71) {
		t.Fatal("ring bits not cleared")
	}
}

func TestRxStreamOrderedCompletion(t *testing.T) {
	var rx rxStream
	rx.init(64)
	m1, m2, m3 := &mcb{msgID: 1}, &mcb{msgID: 2}, &mcb{msgID: 3}
	out := rx.complete(2, m2, nil)
	out = rx.complete(1, m1, out)
	if len(out) != 0 {
		t.Fatal("delivered before message 0")
	}
	out = rx.complete(0, nil, out) // aborted
	if len(out) != 2 || out[0] != m1 || out[1] != m2 {
		t.Fatalf("got %v", out)
	}
	out = rx.complete(3, m3, out[:0])
	if len(out) != 1 || !rx.finished(3) || rx.finished(4) {
		t.Fatal("message 3")
	}
}

func TestTxRingGrowAndFind(t *testing.T) {
	var tx txStream
	tx.init(&Engine{cfg: Config{Window: 4096}})
	for s := uint64(0); s < 200; s++ {
		tx.push(txEntry{seq: s})
	}
	tx.pop()
	tx.pop()
	for s := uint64(200); s < 300; s++ {
		tx.push(txEntry{seq: s})
	}
	if e := tx.find(150); e == nil || e.seq != 150 {
		t.Fatal("find")
	}
	if tx.find(1) != nil || tx.find(300) != nil {
		t.Fatal("find outside ring")
	}
	tx.sampleRTT(100e3, 4e6, 1e9)
	if tx.rto != 4e6 {
		t.Fatalf("rto %v not clamped", tx.rto)
	}
	tx.nextSeq = 300
	c := tx.cwnd
	tx.onLoss(10, false)
	if tx.cwnd != c/2 {
		t.Fatal("loss did not halve the window")
	}
	tx.onLoss(11, false)
	if tx.cwnd != c/2 {
		t.Fatal("second loss in the same window halved again")
	}
}

type ackBodyForTest struct{ wire.AckBody }

// TestMCBPoolGrows: blocks are made a segment at a time as they are
// needed, up to the capacity, each at its own index, and blocks of every
// segment go back and are taken again.
func TestMCBPoolGrows(t *testing.T) {
	const n = 2*mcbSeg + 100
	pool := newMCBPool(n)
	if pool.made != mcbSeg {
		t.Fatalf("new pool made %d blocks, want %d", pool.made, mcbSeg)
	}
	seen := make(map[int32]bool, n)
	var taken []*mcb
	for range n {
		m := pool.get()
		if m == nil {
			t.Fatalf("pool of %d empty after %d takes", n, len(taken))
		}
		if seen[m.idx] || pool.at(m.idx) != m {
			t.Fatalf("block %d taken twice or not at its index", m.idx)
		}
		seen[m.idx] = true
		taken = append(taken, m)
	}
	if pool.get() != nil || pool.made != n {
		t.Fatalf("pool past its capacity (%d made of %d)", pool.made, n)
	}
	for _, m := range taken {
		pool.put(m)
	}
	if k := pool.inUse(); k != 0 {
		t.Fatalf("%d blocks in use after all were put back", k)
	}
	for range n {
		if pool.get() == nil {
			t.Fatal("a block put back was not taken again")
		}
	}
}

// TestMCBBitmapReused: a block that held a message of a few fragments (a
// bitmap in the block itself) then holds one of many fragments, and the
// other way round, marking exactly the fragments that came (the odd ones
// or the even ones, in turn, so that a mark left from the message before
// shows); a message of up to wordFrags fragments uses no bitmap block.
func TestMCBBitmapReused(t *testing.T) {
	var bp bufPool
	pool := newMCBPool(1)
	for k, nfrag := range []uint32{1, 300, 2, 5000, 70, 1, 64, 65, 64, 3} {
		m := pool.get()
		m.start(uint64(nfrag)*minFragSize, minFragSize, nfrag, &bp)
		odd := uint32(k % 2)
		for i := odd; i < nfrag; i += 2 {
			m.place(i, make([]byte, minFragSize))
		}
		for i := uint32(0); i < nfrag; i++ {
			if m.hasFrag(i) != (i%2 == odd) {
				t.Fatalf("message %d, %d fragments: fragment %d marked %v", k, nfrag, i, m.hasFrag(i))
			}
		}
		if k == 0 && len(m.bits) != 0 {
			t.Fatalf("a message of one fragment has a bitmap of %d blocks", len(m.bits))
		}
		pool.put(m)
	}
}

// TestTableThreadsShareStripe interleaves two receiving threads of one
// stripe: each thread's wildcard receives and unexpected messages stay
// its own, whichever thread the stripe looked up last.
func TestTableThreadsShareStripe(t *testing.T) {
	tab, pool := newTestTable(4)
	a := ThreadID(1)
	b := a + 1
	for stripeOf(b) != stripeOf(a) {
		b++
	}
	wild := func(th ThreadID) *Request {
		return &Request{dstThread: th, srcProc: AnyProc, srcThread: AnyThread, tag: AnyTag}
	}
	// Unexpected messages of both, interleaved, then wildcard receives
	// taking them in turn.
	for i := uint64(0); i < 4; i++ {
		arrive(tab, pool, key{1, 2, a, 7}, i)
		arrive(tab, pool, key{1, 2, b, 7}, 100+i)
	}
	for i := uint64(0); i < 4; i++ {
		if m := post(tab, wild(a)); m == nil || m.msgID != i {
			t.Fatalf("thread a: want message %d, got %+v", i, m)
		} else {
			pool.put(m)
		}
		if m := post(tab, wild(b)); m == nil || m.msgID != 100+i {
			t.Fatalf("thread b: want message %d, got %+v", 100+i, m)
		} else {
			pool.put(m)
		}
	}
	// A wildcard receive of a posted: a message for b must not take it.
	ra := wild(a)
	if m := post(tab, ra); m != nil {
		t.Fatalf("nothing should wait for a, got %+v", m)
	}
	if r := arrive(tab, pool, key{1, 2, b, 7}, 200); r != nil {
		t.Fatalf("a message for thread %d took thread %d's receive", b, a)
	}
	if r := arrive(tab, pool, key{1, 2, a, 7}, 201); r != ra {
		t.Fatalf("a message for thread %d did not take its receive: %v", a, r)
	}
	if m := post(tab, wild(b)); m == nil || m.msgID != 200 {
		t.Fatalf("thread b: want message 200, got %+v", m)
	} else {
		pool.put(m)
	}
	if pool.inUse() != 0 {
		t.Fatalf("%d control blocks still in use", pool.inUse())
	}
}

// TestSizeClass checks that a buffer's class is the smallest power of two
// that holds it.
func TestSizeClass(t *testing.T) {
	for n := 1; n <= 1<<17; n++ {
		c := sizeClass(n)
		if 1<<c < n || c > 0 && 1<<(c-1) >= n {
			t.Fatalf("sizeClass(%d) = %d", n, c)
		}
	}
}

// The table matches as a plain model of MPI matching does, over a random
// run of receives (exact and wildcard) posted and withdrawn and messages
// arriving, for threads that share a stripe and one that does not: an
// arrival goes to the earliest posted receive of its thread that matches
// it, a receive to the earliest arrived message that it matches. The
// stripe's count of wildcard receives, which lets matching skip the
// thread's state, is the number posted.
func TestTableMatchesModel(t *testing.T) {
	pool := newMCBPool(1 << 14)
	tab := newRecvTable(pool, 8)
	a := ThreadID(1)
	b := a + 1
	for stripeOf(b) != stripeOf(a) {
		b++
	}
	c := a + 1
	for stripeOf(c) == stripeOf(a) {
		c++
	}
	threads := []ThreadID{a, b, c}
	type msg struct {
		k  key
		id uint64
	}
	type rcv struct {
		r   *Request
		seq int
	}
	var unexp []msg  // model: arrival order
	var posted []rcv // model: posting order
	seq := 0
	rng := uint64(88172645463325252)
	next := func(n int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(n))
	}
	wild := func() bool { return next(3) == 0 }
	checkWild := func(step int) {
		for _, th := range threads {
			s := tab.stripe(th)
			n := 0
			for _, ts := range s.threads {
				for r := ts.wild.head; r != nil; r = r.next {
					n++
				}
			}
			if s.wild != n {
				t.Fatalf("step %d: stripe of thread %d counts %d wildcard receives, %d are posted", step, th, s.wild, n)
			}
		}
	}
	for step := range 20000 {
		th := threads[next(len(threads))]
		k := key{ProcID(next(2)), ThreadID(next(2)), th, Tag(next(2))}
		switch op := next(10); {
		case op < 4: // a message arrives
			id := uint64(step)
			var want *Request
			best := -1
			for i, p := range posted {
				if p.r.dstThread == th && matches(p.r, k) && (best < 0 || p.seq < posted[best].seq) {
					best = i
				}
			}
			if best >= 0 {
				want = posted[best].r
				posted = append(posted[:best], posted[best+1:]...)
			} else {
				unexp = append(unexp, msg{k, id})
			}
			if got := arrive(tab, pool, k, id); got != want {
				t.Fatalf("step %d: message %+v went to receive %+v, want %+v", step, k, got, want)
			}
		case op < 8: // a receive is posted
			r := &Request{dstThread: th, srcProc: k.srcProc, srcThread: k.srcThread, tag: k.tag}
			if wild() {
				r.srcProc = AnyProc
			}
			if wild() {
				r.srcThread = AnyThread
			}
			if wild() {
				r.tag = AnyTag
			}
			best := -1
			for i, m := range unexp {
				if m.k.dstThread == th && matches(r, m.k) {
					best = i
					break
				}
			}
			m := post(tab, r)
			switch {
			case best < 0 && m != nil:
				t.Fatalf("step %d: receive %+v took message %+v, none matches", step, r, m.key)
			case best >= 0 && (m == nil || m.msgID != unexp[best].id):
				t.Fatalf("step %d: receive %+v took %+v, want message %d", step, r, m, unexp[best].id)
			case best >= 0:
				unexp = append(unexp[:best], unexp[best+1:]...)
				pool.put(m)
			default:
				seq++
				posted = append(posted, rcv{r, seq})
			}
		default: // a posted receive is withdrawn
			if len(posted) == 0 {
				continue
			}
			i := next(len(posted))
			r := posted[i].r
			s := tab.stripe(r.dstThread)
			s.mu.Lock()
			ok := tab.unpost(s, r)
			s.mu.Unlock()
			if !ok {
				t.Fatalf("step %d: receive %+v not found to withdraw", step, r)
			}
			posted = append(posted[:i], posted[i+1:]...)
		}
		checkWild(step)
	}
	if len(unexp) == 0 || len(posted) == 0 {
		t.Logf("%d unexpected, %d posted at the end", len(unexp), len(posted))
	}
}

// A Probe that waits is woken by a message that arrives for its thread
// (the table signals the thread's notify only while a Probe waits on it),
// and the thread's arrivals stop signalling once no Probe waits.
func TestProbeWokenByArrival(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	// A guard against a hang, not a timing.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const th = 4
	probes := func() int {
		s := e1.table.stripe(th)
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.thread(th).probes
	}
	for i := range 3 {
		got := make(chan error, 1)
		go func() {
			st, err := e1.probe(ctx, th, 0, 7, 9)
			if err == nil && st.Len != i+1 {
				t.Errorf("probe %d: message of %d bytes, want %d", i, st.Len, i+1)
			}
			got <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); probes() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the probe never waited")
			}
		}
		time.Sleep(5 * time.Millisecond) // the probe parks
		e0.post(e0.newSend(7, 1, th, 9, make([]byte, i+1)))
		if err := <-got; err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		if n := probes(); n != 0 {
			t.Fatalf("probe %d returned, %d still counted", i, n)
		}
		r := e1.newRecv(th, 0, 7, 9, nil)
		e1.post(r)
		if err := r.Wait(ctx); err != nil || len(r.Data()) != i+1 {
			t.Fatalf("receive %d: %d bytes, %v", i, len(r.Data()), err)
		}
	}
}
