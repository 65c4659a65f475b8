package shm

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// statFields is how /proc/pid/stat was read before: split into fields
// after the command name, with allocations. parseStat must agree with it.
func statFields(b []byte) (uint64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, false
	}
	return v, fields[0][0] == 'Z' || fields[0][0] == 'X'
}

// TestProcStat checks that procStat reads this process's start time and
// state as the field-splitting reader did, from the real file and from
// made-up lines (a command name with spaces and parentheses, a zombie,
// lines cut short), and that it allocates nothing: the sender's liveness
// look at its receiver (Port.Taken) runs every 10 ms of a stream.
func TestProcStat(t *testing.T) {
	pid := os.Getpid()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	wantStart, wantZombie := statFields(b)
	if wantStart == 0 {
		t.Fatalf("no start time in %q", b)
	}
	if st, z := procStat(pid); st != wantStart || z != wantZombie {
		t.Fatalf("procStat(self) = %d, %v; want %d, %v", st, z, wantStart, wantZombie)
	}
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 123456789 4096 55 18446744073709551615\n"
	lines := []string{
		string(b),
		"1 (a b) S 1" + tail,
		"7 (x) (y) Z 1" + tail,
		"7 (x)) X 1" + tail,
		"9 ((sd-pam)) R 1" + tail,
		"9 (t) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",                          // field 22 missing
		"9 (t) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 77",                     // ends with field 22
		"9 (t) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 7x 8",                   // not a number
		"9 (t) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 99999999999999999999 8", // past 64 bits
		"no parenthesis 1 2 3",
		"",
		")",
	}
	for _, l := range lines {
		ws, wz := statFields([]byte(l))
		if st, z := parseStat([]byte(l)); st != ws || z != wz {
			t.Errorf("parseStat(%q) = %d, %v; want %d, %v", l, st, z, ws, wz)
		}
	}
	if st, _ := procStat(1 << 30); st != 0 {
		t.Errorf("procStat of a pid that cannot exist = %d", st)
	}
	if st, _ := procStat(-1); st != 0 {
		t.Errorf("procStat(-1) = %d", st)
	}
	if !raceEnabled {
		if n := testing.AllocsPerRun(50, func() { procStat(pid) }); n != 0 {
			t.Errorf("procStat allocates %.0f times", n)
		}
		if n := testing.AllocsPerRun(50, func() { alive(uint32(pid), wantStart) }); n != 0 {
			t.Errorf("alive allocates %.0f times", n)
		}
	}
}
