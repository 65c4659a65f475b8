package engine

// Test shorthands for requests built and posted by hand.

func (e *Engine) newSend(src ThreadID, dstProc ProcID, dstThread ThreadID, tag Tag, data []byte) *Request {
	r := newRequest(e, sendReq)
	r.setSend(src, dstProc, dstThread, tag, data)
	return r
}

func (e *Engine) newRecv(dst ThreadID, srcProc ProcID, srcThread ThreadID, tag Tag, buf []byte) *Request {
	r := newRequest(e, recvReq)
	r.setRecv(dst, srcProc, srcThread, tag, buf)
	return r
}

// rearmRecv makes a completed request a receive again.
func (r *Request) rearmRecv(dst ThreadID, srcProc ProcID, srcThread ThreadID, tag Tag, buf []byte) {
	r.reset()
	r.kind = recvReq
	r.setRecv(dst, srcProc, srcThread, tag, buf)
}
