package verbs

import (
	"fmt"
	"sync"
	"unsafe"
)

// UD queue pairs and address handles: unreliable datagrams, each sent to a
// (GID, QPN, Q_Key) named per work request. A port uses one to exchange
// the addresses of its reliable-connected queue pairs with its peers.

// GRHSize is the room a UD receive buffer leaves before the payload: the
// device writes the packet's global routing header (for RoCEv2 over IPv4,
// the IPv4 header in its last 20 bytes) there.
const GRHSize = 40

// CreateUDQP creates an unreliable-datagram queue pair (CREATE_QP) and
// maps its rings. Bring it up with ToInitUD, ToRTRUD and ToRTSUD.
func (pd *PD) CreateUDQP(sendCQ, recvCQ *CQ, caps QPCaps) (*QP, error) {
	return pd.createQP(sendCQ, recvCQ, caps, qptUD)
}

// ToInitUD moves a UD QP from RESET to INIT on port, accepting datagrams
// that carry qkey.
func (qp *QP) ToInitUD(port uint8, qkey uint32) error {
	m := modifyQP{AttrMask: qpAttrState | qpAttrPkeyIndex | qpAttrPort | qpAttrQKey,
		QPState: qpsInit, PortNum: port, QKey: qkey}
	return qp.modify(&m, "MODIFY_QP(UD INIT)")
}

// ToRTSUD moves a UD QP from INIT through RTR to RTS.
func (qp *QP) ToRTSUD(psn uint32) error {
	m := modifyQP{AttrMask: qpAttrState, QPState: qpsRTR}
	if err := qp.modify(&m, "MODIFY_QP(UD RTR)"); err != nil {
		return err
	}
	m = modifyQP{AttrMask: qpAttrState | qpAttrSQPSN, QPState: qpsRTS, SQPSN: psn & 0xffffff}
	return qp.modify(&m, "MODIFY_QP(UD RTS)")
}

// AH is an address handle: the route (RoCEv2, global routing) to one GID,
// for UD sends.
type AH struct {
	ctx    *Context
	handle uint32
	num    uint32 // rxe's index of the AH, named in each work request
	once   sync.Once
	err    error
}

// CreateAH creates an address handle to gid from local GID sgidIndex on
// port (CREATE_AH); the kernel resolves the destination's link address.
func (pd *PD) CreateAH(port uint8, sgidIndex uint8, gid GID) (*AH, error) {
	req := createAH{PDHandle: pd.handle, Attr: ahAttr{
		GRH:      globalRoute{DGID: gid, SGIDIndex: sgidIndex, HopLimit: 64},
		IsGlobal: 1, PortNum: port}}
	resp := make([]byte, unsafe.Sizeof(createAHRespRXE{}))
	if err := pd.ctx.write("CREATE_AH", cmdCreateAH, bytesOf(&req), resp); err != nil {
		return nil, err
	}
	r := (*createAHRespRXE)(unsafe.Pointer(&resp[0]))
	ah := &AH{ctx: pd.ctx, handle: r.AHHandle, num: r.AHNum}
	if ah.num == 0 {
		ah.Close()
		return nil, fmt.Errorf("rdma: CREATE_AH: the provider returned no AH index")
	}
	return ah, nil
}

// Close destroys the address handle (DESTROY_AH). It is idempotent.
func (ah *AH) Close() error {
	ah.once.Do(func() {
		req := handleCmd{Handle: ah.handle}
		ah.err = ah.ctx.write("DESTROY_AH", cmdDestroyAH, bytesOf(&req), nil)
	})
	return ah.err
}

// PostSendUD writes a UD SEND of the SGEs to QP qpn behind ah, carrying
// qkey, into the send ring. It is not seen by the device until Doorbell.
func (qp *QP) PostSendUD(wrID uint64, ah *AH, qpn, qkey uint32, sges ...SGE) error {
	if len(sges) > qp.MaxSendSGE() {
		return fmt.Errorf("rdma: %d SGEs, the send queue holds %d", len(sges), qp.MaxSendSGE())
	}
	s := qp.sq.producerSlot()
	if s == nil {
		return ErrQueueFull
	}
	clear(s[:swqeSGE])
	put32 := func(off int, v uint32) { *(*uint32)(unsafe.Pointer(&s[off])) = v }
	*(*uint64)(unsafe.Pointer(&s[swqeWrID])) = wrID
	put32(swqeOpcode, wrSend)
	put32(swqeSendFlags, sendSignaled)
	put32(swqeUDQPN, qpn)
	put32(swqeUDQKey, qkey)
	put32(swqeUDAHNum, ah.num)
	qp.produceSend(s, sges)
	return nil
}
