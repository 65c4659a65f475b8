// Package routing computes, for one process, how to reach every other
// process of the application: which local port to send on, which process
// is the next hop and at which address. It is a pure data structure built
// from the directory's membership; it does no I/O and starts no goroutine.
// The table is rebuilt from scratch (Build) on every join or leave, and
// Table.Lookup is cheap and allocation-free, for use on every message.
//
// # Links
//
// Two processes are linked directly when each has a port with the same
// fabric kind and network name (directory.PortInfo Fabric and Network). A
// process with ports on several networks is a gateway: messages between
// networks travel through one or more of them.
//
// # Cost model
//
// Sending a message of m bytes over a link costs
//
//	T(m) = latency + m / bandwidth
//
// a fixed per-message cost plus a per-byte cost. Each port states its
// latency and bandwidth (zero means unknown, and the Model's default for
// the fabric kind is used: udp 50 µs and 1 GB/s, rdma 5 µs and 10 GB/s,
// mem 1 µs and 10 GB/s). A link's fixed cost is the mean of its two ports'
// latencies and its per-byte cost the larger of their 1/bandwidth (a link
// is as fast as its slower end), so ports that agree give the link exactly
// their figures. The links of the local process can be priced one by one
// instead (Model.Links): from a fit of T(m) = a + b·m to measured round
// trips (Prices; in two regimes, one line for small messages and one for
// large, where one line does not describe the link: LinkCost.Large), or
// pinned by configuration. Where a local link has two regimes, Build cuts
// the message sizes where a regime starts and finds the envelope below
// in each range, every link a line there. Every gateway crossed adds
// Model.Forward (10 µs by default) to the fixed cost. A gateway forwards a
// message fragment by fragment, so a long message streams through a path
// at the pace of its slowest link:
//
//	T_path(m) = A + B·m,  A = Σ latency_i + gateways·Forward,  B = max 1/bandwidth_i
//
// # Choosing by size, and the crossover
//
// Each path is a line in m, and the best route for a size m is the lowest
// line at m. Over all sizes the best routes form the lower envelope of
// these lines: the path with the least fixed cost A for the smallest
// messages, the path with the least per-byte cost B for the largest, and
// possibly some in between. Build finds the envelope exactly for each
// destination without listing paths: for every per-byte cost b that an
// edge has, a shortest-path search by fixed cost over the edges no slower
// than b gives each destination's cheapest path with bottleneck at most
// b; the best path at any size is among these, so the lower envelope of
// their lines is the answer. Two lines P (A_P < A_Q) and Q (B_Q < B_P)
// cross at m* = (A_Q − A_P) / (B_P − B_Q).
//
// Messages smaller than ⌈m*⌉ bytes take P and the others Q. With two
// direct networks, one of latency L1 and bandwidth W1 and the other slower
// to start (L2 > L1) but faster (W2 > W1), the crossover is
//
//	m* = (L2 − L1) / (1/W1 − 1/W2)
//
// For example 20 µs at 100 MB/s against 100 µs at 10 GB/s crosses at
// 80 µs / 9.9 ns per byte ≈ 8081 bytes. Ties go to fewer hops, then to the
// lower process id.
package routing
