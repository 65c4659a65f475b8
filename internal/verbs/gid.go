package verbs

import "fmt"

// PickGID returns the GID entry of port to send from: index idx when
// idx >= 0, else the first RoCEv2 IPv4-mapped GID, else the first RoCEv2
// GID, else the first non-zero one.
func PickGID(ctx *Context, port uint8, idx int) (GIDEntry, error) {
	pa, err := ctx.QueryPort(port)
	if err != nil {
		return GIDEntry{}, err
	}
	n := int(pa.GIDTblLen)
	if n <= 0 {
		n = 16
	}
	all, err := ctx.QueryGIDTable(n * int(max(1, len(ctx.Dev.Ports))))
	if err != nil {
		return GIDEntry{}, err
	}
	var mine []GIDEntry
	for _, e := range all {
		if e.Port == uint32(port) && !e.GID.IsZero() {
			mine = append(mine, e)
		}
	}
	if idx >= 0 {
		for _, e := range mine {
			if int(e.Index) == idx {
				return e, nil
			}
		}
		return GIDEntry{}, fmt.Errorf("rdma: %s port %d has no GID at index %d", ctx.Dev.Name, port, idx)
	}
	for _, pred := range []func(GIDEntry) bool{
		GIDEntry.IsRoCEv2IPv4,
		func(e GIDEntry) bool { return e.Type == gidTypeRoCEv2 },
		func(GIDEntry) bool { return true },
	} {
		for _, e := range mine {
			if pred(e) {
				return e, nil
			}
		}
	}
	return GIDEntry{}, fmt.Errorf("rdma: %s port %d has no GID", ctx.Dev.Name, port)
}
