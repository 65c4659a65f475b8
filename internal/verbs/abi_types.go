package verbs

// Go mirrors of the uapi command and response structs. Field order, widths
// and padding match the C layout on 64-bit little-endian Linux; abi_test.go
// checks every size and offset against values taken from the headers.

type cmdHdr struct { // struct ib_uverbs_cmd_hdr
	Command  uint32
	InWords  uint16
	OutWords uint16
}

type respOnly struct{ Response uint64 } // get_context, query_device, alloc_pd, create_comp_channel

type getContextResp struct { // struct ib_uverbs_get_context_resp
	AsyncFD        uint32
	NumCompVectors uint32
}

type queryDeviceResp struct { // struct ib_uverbs_query_device_resp
	FwVer                 uint64
	NodeGUID              uint64
	SysImageGUID          uint64
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HwVer                 uint32
	MaxQP                 uint32
	MaxQPWr               uint32
	DeviceCapFlags        uint32
	MaxSGE                uint32
	MaxSGERd              uint32
	MaxCQ                 uint32
	MaxCQE                uint32
	MaxMR                 uint32
	MaxPD                 uint32
	MaxQPRdAtom           uint32
	MaxEERdAtom           uint32
	MaxResRdAtom          uint32
	MaxQPInitRdAtom       uint32
	MaxEEInitRdAtom       uint32
	AtomicCap             uint32
	MaxEE                 uint32
	MaxRDD                uint32
	MaxMW                 uint32
	MaxRawIPv6QP          uint32
	MaxRawEthyQP          uint32
	MaxMcastGrp           uint32
	MaxMcastQPAttach      uint32
	MaxTotalMcastQPAttach uint32
	MaxAH                 uint32
	MaxFMR                uint32
	MaxMapPerFMR          uint32
	MaxSRQ                uint32
	MaxSRQWr              uint32
	MaxSRQSGE             uint32
	MaxPkeys              uint16
	LocalCAAckDelay       uint8
	PhysPortCnt           uint8
	Reserved              [4]uint8
}

type queryPortResp struct { // struct ib_uverbs_query_port_resp_ex
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPkeyCntr   uint32
	QkeyViolCntr  uint32
	GIDTblLen     uint32
	PkeyTblLen    uint16
	LID           uint16
	SMLID         uint16
	State         uint8
	MaxMTU        uint8
	ActiveMTU     uint8
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     uint8
	LinkLayer     uint8
	Flags         uint8
	Reserved      uint8
	PortCapFlags2 uint16
	Reserved2     [6]uint8
}

type gidEntry struct { // struct ib_uverbs_gid_entry
	GID           [16]byte
	GIDIndex      uint32
	PortNum       uint32
	GIDType       uint32
	NetdevIfindex uint32
}

type ioctlHdr struct { // struct ib_uverbs_ioctl_hdr
	Length    uint16
	ObjectID  uint16
	MethodID  uint16
	NumAttrs  uint16
	Reserved1 uint64
	DriverID  uint32
	Reserved2 uint32
}

type ioctlAttr struct { // struct ib_uverbs_attr
	AttrID   uint16
	Len      uint16
	Flags    uint16
	AttrData uint16
	Data     uint64
}

type allocPDResp struct{ PDHandle uint32 } // struct ib_uverbs_alloc_pd_resp

type handleCmd struct{ Handle uint32 } // dealloc_pd, dereg_mr

type regMR struct { // struct ib_uverbs_reg_mr
	Response    uint64
	Start       uint64
	Length      uint64
	HCAVA       uint64
	PDHandle    uint32
	AccessFlags uint32
}

type regMRResp struct { // struct ib_uverbs_reg_mr_resp
	MRHandle uint32
	LKey     uint32
	RKey     uint32
}

type compChannelResp struct{ FD uint32 } // struct ib_uverbs_create_comp_channel_resp

type createCQ struct { // struct ib_uverbs_create_cq
	Response    uint64
	UserHandle  uint64
	CQE         uint32
	CompVector  uint32
	CompChannel int32
	Reserved    uint32
}

type mmInfo struct { // struct mminfo (rdma_user_rxe.h)
	Offset uint64
	Size   uint32
	Pad    uint32
}

type createCQRespRXE struct { // ib_uverbs_create_cq_resp + rxe_create_cq_resp
	CQHandle uint32
	CQE      uint32
	MI       mmInfo
}

type reqNotifyCQ struct { // struct ib_uverbs_req_notify_cq
	CQHandle      uint32
	SolicitedOnly uint32
}

type destroyCmd struct { // struct ib_uverbs_destroy_cq, ib_uverbs_destroy_qp
	Response uint64
	Handle   uint32
	Reserved uint32
}

type destroyResp struct { // ib_uverbs_destroy_cq_resp (destroy_qp_resp is its first half)
	Events1 uint32
	Events2 uint32
}

type workCompletion struct { // struct ib_uverbs_wc
	WrID         uint64
	Status       uint32
	Opcode       uint32
	VendorErr    uint32
	ByteLen      uint32
	ImmData      uint32
	QPNum        uint32
	SrcQP        uint32
	WCFlags      uint32
	PkeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	PortNum      uint8
	Reserved     uint8
}

type createQP struct { // struct ib_uverbs_create_qp
	Response      uint64
	UserHandle    uint64
	PDHandle      uint32
	SendCQHandle  uint32
	RecvCQHandle  uint32
	SRQHandle     uint32
	MaxSendWr     uint32
	MaxRecvWr     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
	SQSigAll      uint8
	QPType        uint8
	IsSRQ         uint8
	Reserved      uint8
}

type createQPRespRXE struct { // ib_uverbs_create_qp_resp + rxe_create_qp_resp
	QPHandle      uint32
	QPN           uint32
	MaxSendWr     uint32
	MaxRecvWr     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
	Reserved      uint32
	RQMI          mmInfo
	SQMI          mmInfo
}

type qpDest struct { // struct ib_uverbs_qp_dest
	DGID         [16]byte
	FlowLabel    uint32
	DLID         uint16
	Reserved     uint16
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     uint8
	PortNum      uint8
}

type modifyQP struct { // struct ib_uverbs_modify_qp
	Dest             qpDest
	AltDest          qpDest
	QPHandle         uint32
	AttrMask         uint32
	QKey             uint32
	RQPSN            uint32
	SQPSN            uint32
	DestQPNum        uint32
	QPAccessFlags    uint32
	PkeyIndex        uint16
	AltPkeyIndex     uint16
	QPState          uint8
	CurQPState       uint8
	PathMTU          uint8
	PathMigState     uint8
	EnSQDAsyncNotify uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	Reserved         [2]uint8
}

type globalRoute struct { // struct ib_uverbs_global_route
	DGID         [16]byte
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	Reserved     uint8
}

type ahAttr struct { // struct ib_uverbs_ah_attr
	GRH         globalRoute
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8
	IsGlobal    uint8
	PortNum     uint8
	Reserved    uint8
}

type createAH struct { // struct ib_uverbs_create_ah
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	Reserved   uint32
	Attr       ahAttr
}

type createAHRespRXE struct { // ib_uverbs_create_ah_resp + rxe_create_ah_resp
	AHHandle uint32
	AHNum    uint32
	Reserved uint32
}

type postSend struct { // struct ib_uverbs_post_send (no work requests: the doorbell)
	Response uint64
	QPHandle uint32
	WrCount  uint32
	SGECount uint32
	WQESize  uint32
}

// sizeofUverbsSendWR is sizeof(struct ib_uverbs_send_wr); the doorbell's
// wqe_size must be at least this.
const sizeofUverbsSendWR = 56

// Offsets into the rxe shared rings (rdma_user_rxe.h). These structs hold
// flexible arrays and unions, so they are written by offset.
const (
	// struct rxe_queue_buf
	rqbLog2ElemSize  = 0
	rqbIndexMask     = 4
	rqbProducerIndex = 128
	rqbConsumerIndex = 256
	rqbData          = 384

	// struct rxe_send_wqe
	swqeWrID       = 0
	swqeOpcode     = 12
	swqeSendFlags  = 16
	swqeRemoteAddr = 24 // wr.rdma.remote_addr
	swqeRKey       = 32 // wr.rdma.rkey
	swqeUDQPN      = 24 // wr.ud.remote_qpn
	swqeUDQKey     = 28 // wr.ud.remote_qkey
	swqeUDAHNum    = 36 // wr.ud.ah_num
	swqeStatus     = 144
	swqeState      = 148
	swqeIOVA       = 152
	swqeSSN        = 176
	swqeDMALength  = 184
	swqeDMAResid   = 188
	swqeDMACurSGE  = 192
	swqeDMANumSGE  = 196
	swqeDMASGEOff  = 200
	swqeSGE        = 208
	sizeofSendWQE  = 208

	// struct rxe_recv_wqe
	rwqeWrID      = 0
	rwqeDMALength = 16
	rwqeDMAResid  = 20
	rwqeDMACurSGE = 24
	rwqeDMANumSGE = 28
	rwqeSGE       = 40
	sizeofRecvWQE = 40

	// struct rxe_sge
	sgeAddr   = 0
	sgeLength = 8
	sgeLKey   = 12
	sizeofSGE = 16
)
