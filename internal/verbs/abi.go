package verbs

// Constants of the uverbs ABI, from the kernel uapi headers
// <rdma/ib_user_verbs.h>, <rdma/ib_user_ioctl_cmds.h>,
// <rdma/ib_user_ioctl_verbs.h>, <rdma/rdma_user_ioctl_cmds.h> and the
// ABI-stable enums of <infiniband/verbs.h> (equal to the kernel's
// ib_verbs.h) that the uapi does not carry.

// Legacy write() command numbers (enum ib_uverbs_write_cmds).
const (
	cmdGetContext        = 0
	cmdQueryDevice       = 1
	cmdQueryPort         = 2
	cmdAllocPD           = 3
	cmdDeallocPD         = 4
	cmdCreateAH          = 5
	cmdDestroyAH         = 8
	cmdRegMR             = 9
	cmdDeregMR           = 13
	cmdCreateCompChannel = 17
	cmdCreateCQ          = 18
	cmdDestroyCQ         = 20
	cmdReqNotifyCQ       = 23
	cmdCreateQP          = 24
	cmdModifyQP          = 26
	cmdDestroyQP         = 27
	cmdPostSend          = 28
)

// ioctl transport.
const (
	rdmaVerbsIoctl = 0xc0181b01 // _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)

	attrFMandatory = 1 // UVERBS_ATTR_F_MANDATORY

	objectDevice = 0 // UVERBS_OBJECT_DEVICE

	methodQueryPort     = 2 // UVERBS_METHOD_QUERY_PORT
	methodQueryGIDTable = 5 // UVERBS_METHOD_QUERY_GID_TABLE

	attrQueryPortPortNum = 0 // UVERBS_ATTR_QUERY_PORT_PORT_NUM
	attrQueryPortResp    = 1 // UVERBS_ATTR_QUERY_PORT_RESP

	attrGIDTableEntrySize      = 0 // UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE
	attrGIDTableRespEntries    = 2 // UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES
	attrGIDTableRespNumEntries = 3 // UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES
)

// enum rdma_driver_id. IRDMA aliases I40IW, so RXE is 14.
const (
	driverIDRXE = 14
	driverIDSIW = 18
)

// GID types (enum ib_uverbs_gid_type).
const (
	gidTypeIB     = 0
	gidTypeRoCEv1 = 1
	gidTypeRoCEv2 = 2
)

// QP types and states (enum ib_qp_type, enum ib_qp_state).
const (
	qptRC = 2
	qptUD = 4

	qpsReset = 0
	qpsInit  = 1
	qpsRTR   = 2
	qpsRTS   = 3
	qpsErr   = 6
)

// QP attribute mask bits (enum ib_qp_attr_mask).
const (
	qpAttrState           = 1 << 0
	qpAttrAccessFlags     = 1 << 3
	qpAttrPkeyIndex       = 1 << 4
	qpAttrPort            = 1 << 5
	qpAttrQKey            = 1 << 6
	qpAttrAV              = 1 << 7
	qpAttrPathMTU         = 1 << 8
	qpAttrTimeout         = 1 << 9
	qpAttrRetryCnt        = 1 << 10
	qpAttrRNRRetry        = 1 << 11
	qpAttrRQPSN           = 1 << 12
	qpAttrMaxQPRdAtomic   = 1 << 13
	qpAttrMinRNRTimer     = 1 << 15
	qpAttrSQPSN           = 1 << 16
	qpAttrMaxDestRdAtomic = 1 << 17
	qpAttrDestQPN         = 1 << 20
)

// Access flags (enum ib_access_flags).
const (
	accessLocalWrite  = 1
	accessRemoteWrite = 2
	accessRemoteRead  = 4
)

// Work request opcodes (enum ib_uverbs_wr_opcode) and send flags.
const (
	wrRDMAWrite = 0
	wrSend      = 2
	wrRDMARead  = 4

	sendSignaled = 2
)

// Work completion opcodes and statuses (enum ib_wc_opcode, ib_wc_status).
const (
	wcSend      = 0
	wcRDMAWrite = 1
	wcRDMARead  = 2
	wcRecv      = 128

	WCSuccess  = 0
	WCFlushErr = 5
)

// Path MTU enum (enum ib_mtu).
const (
	mtu256  = 1
	mtu1024 = 3
	mtu4096 = 5
)

// Port states (enum ib_port_state).
const PortActive = 4
