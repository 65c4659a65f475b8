package athread

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// FuzzMessages feeds arbitrary bytes to the decoders of the runtime's
// messages and to a runtime's message handler: nothing may panic, and what
// decodes must encode back to the same bytes.
func FuzzMessages(f *testing.F) {
	f.Add(uint8(tagSteal)<<1|1, stealReq{thief: 3, seq: 7, hops: 1}.append(nil))
	f.Add(uint8(tagTask)<<1|1, taskMsg{owner: 1, key: 9, seq: 2, fn: 0, depth: 3, cost: 5, flags: flagIdempotent, in: []byte{1, 2, 3, 4, 5, 6, 7, 8}}.append(nil))
	f.Add(uint8(tagTask)<<1|1, taskMsg{owner: 1, key: 9, fn: 7, in: []byte{1}}.append(nil))
	f.Add(uint8(tagResult)<<1|1, resultMsg{key: 4, status: resultErr, payload: []byte("bad")}.append(nil))
	f.Add(uint8(tagNoWork)<<1|1, noWork{seq: 1, held: true}.append(nil))
	f.Add(uint8(tagResult)<<1|1, resultMsg{key: 5, placed: true, thread: 17, payload: []byte{1, 0, 0, 0, 0, 0, 0, 0}}.append(nil))
	f.Add(uint8(tagStarted)<<1|1, make([]byte, 12))
	f.Add(uint8(tagWhere)<<1|1, make([]byte, 8))
	f.Add(uint8(tagTrace)<<1|1, []byte(`[{"name":"x","ph":"X"}]`))
	f.Add(uint8(tagDone)<<1, []byte{})
	reg := NewRegistry()
	RegisterIn(reg, "sq", func(ctx context.Context, n int) (int, error) { return n * n, nil }, Fixed[int](), Fixed[int]())
	node, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: 0xf022})
	if err != nil {
		f.Fatal(err)
	}
	defer node.Close()
	f.Fuzz(func(t *testing.T, tag uint8, data []byte) {
		var sr stealReq
		if sr.decode(data) == nil && !bytes.Equal(sr.append(nil), data) {
			t.Fatalf("steal request does not round-trip")
		}
		var tm taskMsg
		if tm.decode(data) == nil && !bytes.Equal(tm.append(nil), data) {
			t.Fatalf("task message does not round-trip")
		}
		var rm resultMsg
		if rm.decode(data) == nil && !bytes.Equal(rm.append(nil), data) {
			t.Fatalf("result does not round-trip")
		}
		var nw noWork
		if nw.decode(data) == nil && !bytes.Equal(nw.append(nil), data) {
			t.Fatalf("no-work answer does not round-trip")
		}
		// A runtime's handler drops what it cannot read (the tag's low bit
		// chooses the sender, process 0 or 1; replies are posted to a
		// process that does not exist, or to this one's service thread,
		// where nobody receives them).
		rt := &Runtime{funcs: reg.freeze(), base: context.Background(), node: node}
		rt.vps = []*vp{{rt: rt, wake: make(chan struct{}, 1)}}
		rt.vps[0].dq.init()
		c := &cluster{rt: rt, node: node, svc: DefaultServiceThread, pol: &Random{}, out: make(chan posted, 16), replyc: make(chan uint32, 16),
			fed: make(chan struct{}, 1), outst: map[uint64]*task{}, hungry: map[pcor.ProcID]time.Time{}, heldBy: map[pcor.ProcID]time.Time{}, traceFrom: map[pcor.ProcID][]chromeEvent{},
			traceWait: make(chan pcor.ProcID, 1), done: make(chan struct{}), procs: []pcor.ProcID{0, 1},
			placed: map[origin]pcor.ThreadID{}, asked: map[origin]time.Time{}}
		c.ctx, c.cancel = context.WithCancel(context.Background())
		c.eps.New = func() any { return node.Thread(DefaultServiceThread) }
		defer c.cancel()
		rt.cl = c
		c.handle(pcor.Message{Data: data, Src: pcor.Addr{Proc: pcor.ProcID(tag & 1)}, Tag: pcor.Tag(tag >> 1)})
	})
}

// FuzzCodecs: the shipped codecs' decoders return errors, never panic, on
// any bytes, and what they accept encodes back to the same bytes.
func FuzzCodecs(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{})
	f.Add([]byte("\x0c\xff\x81\x03\x01\x02\xff\x82\x00"))
	type pair struct {
		A int32
		B [3]uint16
	}
	fixed := Fixed[pair]()
	ints := Fixed[int]()
	gobs := Gob[map[string][]int]()
	f.Fuzz(func(t *testing.T, data []byte) {
		if v, err := fixed.Decode(data); err == nil {
			if b, _ := fixed.Append(nil, v); !bytes.Equal(b, data) {
				t.Fatal("fixed codec does not round-trip")
			}
		}
		if v, err := ints.Decode(data); err == nil {
			if b, _ := ints.Append(nil, v); !bytes.Equal(b, data) {
				t.Fatal("int codec does not round-trip")
			}
		}
		gobs.Decode(data)
		String().Decode(data)
		Bytes().Decode(data)
		None().Decode(data)
	})
}
