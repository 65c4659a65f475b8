package main

import (
	"bytes"
	"io"
	"sync"
)

// lockedWriter serialises whole lines from many processes onto one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) writeLine(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(b)
}

// prefixWriter prefixes each line written to it and passes whole lines on.
type prefixWriter struct {
	prefix []byte
	out    *lockedWriter
	mu     sync.Mutex
	buf    []byte
}

// maxLine is the longest partial line held; longer ones are cut.
const maxLine = 64 << 10

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.buf = append(p.buf, b...)
			if len(p.buf) >= maxLine {
				p.emit(nil)
			}
			break
		}
		p.emit(b[:i+1])
		b = b[i+1:]
	}
	return n, nil
}

// emit writes the held partial line followed by rest as one line.
func (p *prefixWriter) emit(rest []byte) {
	line := make([]byte, 0, len(p.prefix)+len(p.buf)+len(rest)+1)
	line = append(line, p.prefix...)
	line = append(line, p.buf...)
	line = append(line, rest...)
	if line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	p.buf = p.buf[:0]
	p.out.writeLine(line)
}

// Flush writes a final line without newline, if any.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.emit(nil)
	}
}
