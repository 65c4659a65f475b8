package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// filePrefix starts the name of every segment file.
const filePrefix = "pcor-shm-"

// segment is one mapped segment file.
type segment struct {
	mem      []byte
	slots    int
	ringSize int
	path     string
	// bell is the write end of the receiver's doorbell (bell_linux.go),
	// -1 when not open.
	bell int
}

// createSegment makes the segment file of a listening port. The file is
// sparse: a ring's pages take memory only once a sender writes into them.
// It returns the doorbell's read end with it.
func createSegment(path string, slots, ringSize int) (*segment, *os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, nil, fmt.Errorf("%w: %s", ErrAddrInUse, path)
		}
		return nil, nil, fmt.Errorf("shm: %w", err)
	}
	defer f.Close()
	size := segmentSize(slots, ringSize)
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, nil, fmt.Errorf("shm: size %s: %w", path, err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, nil, fmt.Errorf("shm: map %s: %w", path, err)
	}
	pid, start := selfID()
	// The doorbell exists before the magic: a sender that sees a
	// complete header finds it.
	bellRd, bellW, err := makeBell(path)
	if err != nil {
		unix.Munmap(mem)
		os.Remove(path)
		return nil, nil, err
	}
	store32(mem, offVersion, segVersion)
	store32(mem, offSlots, uint32(slots))
	store32(mem, offRingSize, uint32(ringSize))
	store32(mem, offPid, pid)
	store64(mem, offStart, start)
	// The magic goes last: a sender that sees it sees a complete header.
	store64(mem, offMagic, segMagic)
	return &segment{mem: mem, slots: slots, ringSize: ringSize, path: path, bell: bellW}, bellRd, nil
}

// openSegment maps the segment of another port, checking its header.
func openSegment(path string) (*segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoPort, path)
		}
		return nil, fmt.Errorf("shm: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	if fi.Size() < headerSize {
		return nil, fmt.Errorf("%w: %s is %d bytes", ErrBadSegment, path, fi.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: map %s: %w", path, err)
	}
	s := &segment{mem: mem, path: path, bell: -1}
	if err := s.check(int(fi.Size())); err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return s, nil
}

// check validates a mapped header against the file's size.
func (s *segment) check(size int) error {
	if load64(s.mem, offMagic) != segMagic {
		return fmt.Errorf("%w: %s: not a pcor segment (or not ready)", ErrBadSegment, s.path)
	}
	if v := load32(s.mem, offVersion); v != segVersion {
		return fmt.Errorf("%w: %s: version %d, want %d", ErrBadSegment, s.path, v, segVersion)
	}
	slots, ring := int(load32(s.mem, offSlots)), int(load32(s.mem, offRingSize))
	if slots < 1 || slots > MaxSlots || ring < MinRingSize || ring > MaxRingSize || ring&(ring-1) != 0 ||
		segmentSize(slots, ring) != size {
		return fmt.Errorf("%w: %s: %d slots of %d bytes in %d bytes", ErrBadSegment, s.path, slots, ring, size)
	}
	s.slots, s.ringSize = slots, ring
	return nil
}

// ownerAlive reports whether the receiving process of s still runs and has
// not closed its port.
func (s *segment) ownerAlive() bool {
	return load32(s.mem, offClosed) == 0 && alive(load32(s.mem, offPid), load64(s.mem, offStart))
}

func (s *segment) unmap() {
	if s.bell >= 0 {
		unix.Close(s.bell)
		s.bell = -1
	}
	if s.mem != nil {
		unix.Munmap(s.mem)
		s.mem = nil
	}
}

// Reap removes the segments in dir ("": PCOR_SHM_DIR, else /dev/shm)
// whose process is gone: a launcher calls it once the processes it started
// have exited, so that those killed leave nothing behind. Listen does the
// same on every start.
func Reap(dir string) { reap(Config{Dir: dir}.withDefaults().Dir) }

// reap removes the segments in dir whose receiving process is gone, so a
// crash leaves nothing behind past the next start.
func reap(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, filePrefix+"*"))
	for _, path := range names {
		if strings.HasSuffix(path, ".tmp") {
			continue
		}
		if seg, ok := strings.CutSuffix(path, bellSuffix); ok {
			// A doorbell whose segment is gone.
			if _, err := os.Stat(seg); errors.Is(err, os.ErrNotExist) {
				os.Remove(path)
			}
			continue
		}
		s, err := openSegment(path)
		if err != nil {
			continue
		}
		gone := !alive(load32(s.mem, offPid), load64(s.mem, offStart))
		s.unmap()
		if gone {
			os.Remove(path)
			os.Remove(path + bellSuffix)
		}
	}
}
