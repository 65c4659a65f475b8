package routing

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Format prints the table, one route a line, in aligned columns, followed
// by the unreachable processes.
func (t *Table) Format(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "DST\tSIZE\tPORT\tFABRIC\tNETWORK\tNEXT\tADDR\tHOPS\tLATENCY\tBANDWIDTH\tPATH\n")
	for i := range t.routes {
		r := &t.routes[i]
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%d\t%s\t%d\t%v\t%s\t%s\n",
			r.Dst, sizeRange(r.MinSize, r.MaxSize), r.Port, r.Fabric, r.Network,
			r.NextHop, r.Addr, r.Hops, r.Latency, rate(r.Bandwidth), joinPath(r.Path))
	}
	for _, u := range t.unreachable {
		fmt.Fprintf(tw, "%d\tunreachable\t\t\t\t\t\t\t\t\t\n", u)
	}
	return tw.Flush()
}

func sizeRange(lo, hi int64) string {
	if hi == math.MaxInt64 {
		return fmt.Sprintf("%d-", lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

func rate(bw float64) string {
	switch {
	case math.IsInf(bw, 1):
		return "inf"
	case bw >= 1e9:
		return fmt.Sprintf("%.3g GB/s", bw/1e9)
	case bw >= 1e6:
		return fmt.Sprintf("%.3g MB/s", bw/1e6)
	}
	return fmt.Sprintf("%.3g kB/s", bw/1e3)
}

func joinPath(p []uint32) string {
	var b strings.Builder
	for i, n := range p {
		if i > 0 {
			b.WriteString(">")
		}
		fmt.Fprint(&b, n)
	}
	return b.String()
}
