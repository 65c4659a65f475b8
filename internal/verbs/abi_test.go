package verbs

import (
	"testing"
	"unsafe"
)

// Expected sizes and offsets are those of the kernel uapi headers
// (<rdma/ib_user_verbs.h>, <rdma/ib_user_ioctl_verbs.h>,
// <rdma/rdma_user_ioctl_cmds.h>, <rdma/rdma_user_rxe.h>) on x86_64, as
// printed by offsetof/sizeof in C.

func TestStructSizes(t *testing.T) {
	cases := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"ib_uverbs_cmd_hdr", unsafe.Sizeof(cmdHdr{}), 8},
		{"ib_uverbs_get_context", unsafe.Sizeof(respOnly{}), 8},
		{"ib_uverbs_get_context_resp", unsafe.Sizeof(getContextResp{}), 8},
		{"ib_uverbs_query_device_resp", unsafe.Sizeof(queryDeviceResp{}), 176},
		{"ib_uverbs_query_port_resp_ex", unsafe.Sizeof(queryPortResp{}), 48},
		{"ib_uverbs_gid_entry", unsafe.Sizeof(gidEntry{}), 32},
		{"ib_uverbs_ioctl_hdr", unsafe.Sizeof(ioctlHdr{}), 24},
		{"ib_uverbs_attr", unsafe.Sizeof(ioctlAttr{}), 16},
		{"ib_uverbs_alloc_pd_resp", unsafe.Sizeof(allocPDResp{}), 4},
		{"ib_uverbs_dealloc_pd", unsafe.Sizeof(handleCmd{}), 4},
		{"ib_uverbs_reg_mr", unsafe.Sizeof(regMR{}), 40},
		{"ib_uverbs_reg_mr_resp", unsafe.Sizeof(regMRResp{}), 12},
		{"ib_uverbs_create_comp_channel_resp", unsafe.Sizeof(compChannelResp{}), 4},
		{"ib_uverbs_create_cq", unsafe.Sizeof(createCQ{}), 32},
		{"ib_uverbs_create_cq_resp+rxe_create_cq_resp", unsafe.Sizeof(createCQRespRXE{}), 8 + 16},
		{"mminfo", unsafe.Sizeof(mmInfo{}), 16},
		{"ib_uverbs_req_notify_cq", unsafe.Sizeof(reqNotifyCQ{}), 8},
		{"ib_uverbs_destroy_cq", unsafe.Sizeof(destroyCmd{}), 16},
		{"ib_uverbs_destroy_cq_resp", unsafe.Sizeof(destroyResp{}), 8},
		{"ib_uverbs_wc", unsafe.Sizeof(workCompletion{}), 48},
		{"ib_uverbs_create_qp", unsafe.Sizeof(createQP{}), 56},
		{"ib_uverbs_create_qp_resp+rxe_create_qp_resp", unsafe.Sizeof(createQPRespRXE{}), 32 + 32},
		{"ib_uverbs_qp_dest", unsafe.Sizeof(qpDest{}), 32},
		{"ib_uverbs_modify_qp", unsafe.Sizeof(modifyQP{}), 112},
		{"ib_uverbs_post_send", unsafe.Sizeof(postSend{}), 24},
		{"ib_uverbs_global_route", unsafe.Sizeof(globalRoute{}), 24},
		{"ib_uverbs_ah_attr", unsafe.Sizeof(ahAttr{}), 32},
		{"ib_uverbs_create_ah", unsafe.Sizeof(createAH{}), 56},
		{"ib_uverbs_create_ah_resp+rxe_create_ah_resp", unsafe.Sizeof(createAHRespRXE{}), 4 + 8},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("sizeof(%s) = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestStructOffsets(t *testing.T) {
	var qd queryDeviceResp
	var qp queryPortResp
	var ge gidEntry
	var ih ioctlHdr
	var ia ioctlAttr
	var rm regMR
	var cc createCQ
	var wc workCompletion
	var cq createQP
	var cqr createQPRespRXE
	var d qpDest
	var m modifyQP
	var ps postSend
	var ah createAH
	cases := []struct {
		name      string
		got, want uintptr
	}{
		{"query_device_resp.vendor_id", unsafe.Offsetof(qd.VendorID), 40},
		{"query_device_resp.max_qp_wr", unsafe.Offsetof(qd.MaxQPWr), 56},
		{"query_device_resp.max_sge", unsafe.Offsetof(qd.MaxSGE), 64},
		{"query_device_resp.max_cqe", unsafe.Offsetof(qd.MaxCQE), 76},
		{"query_device_resp.phys_port_cnt", unsafe.Offsetof(qd.PhysPortCnt), 171},
		{"query_port_resp.gid_tbl_len", unsafe.Offsetof(qp.GIDTblLen), 16},
		{"query_port_resp.state", unsafe.Offsetof(qp.State), 26},
		{"query_port_resp.active_mtu", unsafe.Offsetof(qp.ActiveMTU), 28},
		{"query_port_resp.link_layer", unsafe.Offsetof(qp.LinkLayer), 37},
		{"query_port_resp_ex.port_cap_flags2", unsafe.Offsetof(qp.PortCapFlags2), 40},
		{"gid_entry.gid_index", unsafe.Offsetof(ge.GIDIndex), 16},
		{"gid_entry.gid_type", unsafe.Offsetof(ge.GIDType), 24},
		{"gid_entry.netdev_ifindex", unsafe.Offsetof(ge.NetdevIfindex), 28},
		{"ioctl_hdr.driver_id", unsafe.Offsetof(ih.DriverID), 16},
		{"ib_uverbs_attr.flags", unsafe.Offsetof(ia.Flags), 4},
		{"ib_uverbs_attr.data", unsafe.Offsetof(ia.Data), 8},
		{"reg_mr.pd_handle", unsafe.Offsetof(rm.PDHandle), 32},
		{"reg_mr.access_flags", unsafe.Offsetof(rm.AccessFlags), 36},
		{"create_cq.cqe", unsafe.Offsetof(cc.CQE), 16},
		{"create_cq.comp_channel", unsafe.Offsetof(cc.CompChannel), 24},
		{"wc.status", unsafe.Offsetof(wc.Status), 8},
		{"wc.opcode", unsafe.Offsetof(wc.Opcode), 12},
		{"wc.byte_len", unsafe.Offsetof(wc.ByteLen), 20},
		{"wc.qp_num", unsafe.Offsetof(wc.QPNum), 28},
		{"wc.wc_flags", unsafe.Offsetof(wc.WCFlags), 36},
		{"wc.port_num", unsafe.Offsetof(wc.PortNum), 46},
		{"create_qp.pd_handle", unsafe.Offsetof(cq.PDHandle), 16},
		{"create_qp.max_send_wr", unsafe.Offsetof(cq.MaxSendWr), 32},
		{"create_qp.max_inline_data", unsafe.Offsetof(cq.MaxInlineData), 48},
		{"create_qp.sq_sig_all", unsafe.Offsetof(cq.SQSigAll), 52},
		{"create_qp.qp_type", unsafe.Offsetof(cq.QPType), 53},
		{"create_qp_resp.qpn", unsafe.Offsetof(cqr.QPN), 4},
		{"rxe_create_qp_resp.rq_mi", unsafe.Offsetof(cqr.RQMI), 32},
		{"rxe_create_qp_resp.sq_mi", unsafe.Offsetof(cqr.SQMI), 32 + 16},
		{"qp_dest.flow_label", unsafe.Offsetof(d.FlowLabel), 16},
		{"qp_dest.dlid", unsafe.Offsetof(d.DLID), 20},
		{"qp_dest.sgid_index", unsafe.Offsetof(d.SGIDIndex), 24},
		{"qp_dest.hop_limit", unsafe.Offsetof(d.HopLimit), 25},
		{"qp_dest.is_global", unsafe.Offsetof(d.IsGlobal), 30},
		{"qp_dest.port_num", unsafe.Offsetof(d.PortNum), 31},
		{"modify_qp.alt_dest", unsafe.Offsetof(m.AltDest), 32},
		{"modify_qp.qp_handle", unsafe.Offsetof(m.QPHandle), 64},
		{"modify_qp.attr_mask", unsafe.Offsetof(m.AttrMask), 68},
		{"modify_qp.qkey", unsafe.Offsetof(m.QKey), 72},
		{"modify_qp.rq_psn", unsafe.Offsetof(m.RQPSN), 76},
		{"modify_qp.sq_psn", unsafe.Offsetof(m.SQPSN), 80},
		{"modify_qp.dest_qp_num", unsafe.Offsetof(m.DestQPNum), 84},
		{"modify_qp.qp_access_flags", unsafe.Offsetof(m.QPAccessFlags), 88},
		{"modify_qp.pkey_index", unsafe.Offsetof(m.PkeyIndex), 92},
		{"modify_qp.qp_state", unsafe.Offsetof(m.QPState), 96},
		{"modify_qp.path_mtu", unsafe.Offsetof(m.PathMTU), 98},
		{"modify_qp.max_rd_atomic", unsafe.Offsetof(m.MaxRdAtomic), 101},
		{"modify_qp.max_dest_rd_atomic", unsafe.Offsetof(m.MaxDestRdAtomic), 102},
		{"modify_qp.min_rnr_timer", unsafe.Offsetof(m.MinRNRTimer), 103},
		{"modify_qp.port_num", unsafe.Offsetof(m.PortNum), 104},
		{"modify_qp.timeout", unsafe.Offsetof(m.Timeout), 105},
		{"modify_qp.retry_cnt", unsafe.Offsetof(m.RetryCnt), 106},
		{"modify_qp.rnr_retry", unsafe.Offsetof(m.RNRRetry), 107},
		{"post_send.wqe_size", unsafe.Offsetof(ps.WQESize), 20},
		{"create_ah.attr", unsafe.Offsetof(ah.Attr), 24},
		{"ah_attr.grh.sgid_index", unsafe.Offsetof(ah.Attr.GRH.SGIDIndex), 20},
		{"ah_attr.grh.hop_limit", unsafe.Offsetof(ah.Attr.GRH.HopLimit), 21},
		{"ah_attr.dlid", unsafe.Offsetof(ah.Attr.DLID), 24},
		{"ah_attr.is_global", unsafe.Offsetof(ah.Attr.IsGlobal), 29},
		{"ah_attr.port_num", unsafe.Offsetof(ah.Attr.PortNum), 30},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("offsetof(%s) = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// The rxe ring structs are written by offset; check the constants.
func TestRXEOffsets(t *testing.T) {
	cases := []struct {
		name      string
		got, want int
	}{
		{"rxe_queue_buf.index_mask", rqbIndexMask, 4},
		{"rxe_queue_buf.producer_index", rqbProducerIndex, 128},
		{"rxe_queue_buf.consumer_index", rqbConsumerIndex, 256},
		{"rxe_queue_buf.data", rqbData, 384},
		{"rxe_send_wr.opcode", swqeOpcode, 12},
		{"rxe_send_wr.send_flags", swqeSendFlags, 16},
		{"rxe_send_wr.wr.rdma.remote_addr", swqeRemoteAddr, 24},
		{"rxe_send_wr.wr.rdma.rkey", swqeRKey, 32},
		{"rxe_send_wr.wr.ud.remote_qpn", swqeUDQPN, 24},
		{"rxe_send_wr.wr.ud.remote_qkey", swqeUDQKey, 28},
		{"rxe_send_wr.wr.ud.ah_num", swqeUDAHNum, 36},
		{"rxe_send_wqe.status", swqeStatus, 144},
		{"rxe_send_wqe.state", swqeState, 148},
		{"rxe_send_wqe.iova", swqeIOVA, 152},
		{"rxe_send_wqe.ssn", swqeSSN, 176},
		{"rxe_send_wqe.dma.length", swqeDMALength, 184},
		{"rxe_send_wqe.dma.resid", swqeDMAResid, 188},
		{"rxe_send_wqe.dma.num_sge", swqeDMANumSGE, 196},
		{"rxe_send_wqe.dma.sge", swqeSGE, 208},
		{"sizeof(rxe_send_wqe)", sizeofSendWQE, 208},
		{"rxe_recv_wqe.dma", rwqeDMALength, 16},
		{"rxe_recv_wqe.dma.num_sge", rwqeDMANumSGE, 28},
		{"rxe_recv_wqe.dma.sge", rwqeSGE, 40},
		{"sizeof(rxe_sge)", sizeofSGE, 16},
		{"rxe_sge.length", sgeLength, 8},
		{"rxe_sge.lkey", sgeLKey, 12},
		{"sizeof(ib_uverbs_send_wr)", sizeofUverbsSendWR, 56},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestCommandNumbers(t *testing.T) {
	// enum ib_uverbs_write_cmds counts from GET_CONTEXT = 0.
	want := map[string][2]int{
		"GET_CONTEXT": {cmdGetContext, 0}, "QUERY_DEVICE": {cmdQueryDevice, 1}, "ALLOC_PD": {cmdAllocPD, 3},
		"DEALLOC_PD": {cmdDeallocPD, 4}, "REG_MR": {cmdRegMR, 9}, "DEREG_MR": {cmdDeregMR, 13},
		"CREATE_COMP_CHANNEL": {cmdCreateCompChannel, 17}, "CREATE_CQ": {cmdCreateCQ, 18},
		"DESTROY_CQ": {cmdDestroyCQ, 20}, "REQ_NOTIFY_CQ": {cmdReqNotifyCQ, 23}, "CREATE_QP": {cmdCreateQP, 24},
		"MODIFY_QP": {cmdModifyQP, 26}, "DESTROY_QP": {cmdDestroyQP, 27}, "POST_SEND": {cmdPostSend, 28},
	}
	for name, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s = %d, want %d", name, v[0], v[1])
		}
	}
	// _IOWR(0x1b, 1, 24-byte header): dir 3<<30 | size 24<<16 | type 0x1b<<8 | nr 1.
	if want := uint32(3<<30 | 24<<16 | 0x1b<<8 | 1); rdmaVerbsIoctl != want {
		t.Errorf("RDMA_VERBS_IOCTL = %#x, want %#x", rdmaVerbsIoctl, want)
	}
}

func TestEncodeWrite(t *testing.T) {
	req := modifyQP{QPHandle: 5, AttrMask: qpAttrState, QPState: qpsInit}
	buf, err := encodeWrite(cmdModifyQP, bytesOf(&req), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(buf) != 120 {
		t.Fatalf("len %d, want 120", len(buf))
	}
	h := (*cmdHdr)(unsafe.Pointer(&buf[0]))
	if h.Command != 26 || h.InWords != 30 || h.OutWords != 0 {
		t.Fatalf("header %+v, want {26 30 0}", *h)
	}
	if buf[8+64] != 5 || buf[8+68] != 1 || buf[8+96] != qpsInit {
		t.Fatal("request not copied after the header")
	}
	if _, err := encodeWrite(cmdDeallocPD, []byte{1, 2, 3}, 0); err == nil {
		t.Fatal("unaligned request accepted")
	}
	if _, err := encodeWrite(cmdQueryDevice, make([]byte, 8), 6); err == nil {
		t.Fatal("unaligned response accepted")
	}
}

func TestEncodeIoctl(t *testing.T) {
	c := newIoctl(objectDevice, methodQueryPort, driverIDRXE)
	c.constIn(attrQueryPortPortNum, 1)
	out := make([]byte, 48)
	c.ptrOut(attrQueryPortResp, out)
	defer c.pin.Unpin()
	b := c.encode()
	if len(b) != 24+2*16 {
		t.Fatalf("len %d", len(b))
	}
	h := (*ioctlHdr)(unsafe.Pointer(&b[0]))
	if h.Length != 56 || h.ObjectID != 0 || h.MethodID != 2 || h.NumAttrs != 2 || h.DriverID != 14 {
		t.Fatalf("header %+v", *h)
	}
	a0 := (*ioctlAttr)(unsafe.Pointer(&b[24]))
	a1 := (*ioctlAttr)(unsafe.Pointer(&b[40]))
	if a0.AttrID != 0 || a0.Len != 8 || a0.Flags != attrFMandatory || a0.Data != 1 {
		t.Fatalf("const attr %+v", *a0)
	}
	if a1.AttrID != 1 || a1.Len != 48 || a1.Data != uint64(uintptr(unsafe.Pointer(&out[0]))) {
		t.Fatalf("out attr %+v", *a1)
	}
}

func TestRingIndices(t *testing.T) {
	mem := make([]byte, rqbData+4*64)
	*(*uint32)(unsafe.Pointer(&mem[rqbLog2ElemSize])) = 6
	*(*uint32)(unsafe.Pointer(&mem[rqbIndexMask])) = 3
	r, err := newRing(mem)
	if err != nil {
		t.Fatal(err)
	}
	if r.capacity() != 3 {
		t.Fatalf("capacity %d", r.capacity())
	}
	for i := 0; i < 3; i++ {
		s := r.producerSlot()
		if s == nil {
			t.Fatalf("full after %d", i)
		}
		s[0] = byte(i + 1)
		r.produce()
	}
	if r.producerSlot() != nil {
		t.Fatal("ring of 4 slots accepted a 4th element")
	}
	for i := 0; i < 3; i++ {
		s := r.consumerSlot()
		if s == nil || s[0] != byte(i+1) {
			t.Fatalf("consume %d: %v", i, s)
		}
		r.consume()
	}
	if r.consumerSlot() != nil || r.inFlight() != 0 {
		t.Fatal("ring not empty")
	}
	if *r.prod != 3 || *r.cons != 3 {
		t.Fatalf("indices %d/%d", *r.prod, *r.cons)
	}
	*(*uint32)(unsafe.Pointer(&mem[rqbIndexMask])) = 5
	if _, err := newRing(mem); err == nil {
		t.Fatal("mask that is not 2^n-1 accepted")
	}
}
