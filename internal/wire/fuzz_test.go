package wire

import "testing"

// FuzzDecode feeds arbitrary datagrams to the decoders: they must never
// panic, and whatever they accept must be self-consistent and re-encode to
// the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(encode(Header{Kind: Data, JobKey: key, FragSize: 100, Total: 250, FragIndex: 2}, make([]byte, 50)))
	f.Add(encode(Header{Kind: Data, JobKey: key, FragSize: 65000, Total: 0}, nil))
	a := AckBody{Cum: 3, Window: 64, NSack: 1, Echo: 9}
	a.Sack[0] = SackBlock{5, 9}
	f.Add(encode(Header{Kind: Ack, JobKey: key}, a.Put(make([]byte, AckBodyLen(1)))))
	f.Add(encode(Header{Kind: Busy, JobKey: key, Seq: 4}, nil))
	f.Add(encode(Header{Kind: Data, Flags: FlagReliable, JobKey: key, FragSize: 100, Total: 250, FragIndex: 1}, make([]byte, 100)))
	f.Add([]byte("not a pcor datagram"))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		h, body, err := Decode(pkt, key)
		if err != nil {
			return
		}
		if int(h.BodyLen) != len(body) || len(pkt) != HeaderSize+len(body) {
			t.Fatalf("lengths: %+v body %d pkt %d", h, len(body), len(pkt))
		}
		if h.Kind == Data {
			if uint64(h.FragIndex) >= FragCount(h.Total, h.FragSize) || uint64(len(body)) != FragLen(h.Total, h.FragSize, h.FragIndex) {
				t.Fatalf("geometry accepted: %+v", h)
			}
		}
		if h.Kind == Ack {
			if a, err := DecodeAck(body); err == nil {
				prev := a.Cum
				for i := 0; i < int(a.NSack); i++ {
					if a.Sack[i].Start <= prev || a.Sack[i].End <= a.Sack[i].Start {
						t.Fatalf("bad blocks accepted: %+v", a)
					}
					prev = a.Sack[i].End
				}
			}
		}
		again := make([]byte, len(pkt))
		h.Encode(again[:HeaderSize], body)
		copy(again[HeaderSize:], body)
		// Reserved bytes are not preserved; compare what is.
		again[6], again[7] = pkt[6], pkt[7]
		if h2, _, err := Decode(again, key); err != nil && pkt[6] == 0 && pkt[7] == 0 || err == nil && h2 != h {
			t.Fatalf("re-encode differs: %v", err)
		}
	})
}
