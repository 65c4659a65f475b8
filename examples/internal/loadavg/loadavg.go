// Package loadavg reads the machine's one-minute load average, which the
// case studies print beside their figures.
package loadavg

import (
	"os"
	"strconv"
	"strings"
)

// Field is the one-minute load average as /proc/loadavg writes it, or "?"
// where it cannot be read.
func Field() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// Value is the one-minute load average, and false where it cannot be read.
func Value() (float64, bool) {
	v, err := strconv.ParseFloat(Field(), 64)
	return v, err == nil
}
