// Package faulty wraps any fabric.Port and injects faults into the
// datagrams it sends: loss, duplication, reordering, corruption and delay,
// plus a partition switch that cuts the port off completely.
//
// Every decision is drawn from a pseudo-random stream seeded with
// Faults.Seed. Each datagram handed to Send consumes the same number of
// draws whatever the faults are, so the n-th datagram always meets the same
// fate for a given seed: two ports wrapped with equal Faults and fed the same
// datagrams drop, duplicate, corrupt and hold back the same ones. (Datagrams
// given to Send from several goroutines at once are numbered in the order
// they take the port's lock.)
//
// Per datagram, in this order:
//
//   - Partition: while the port is cut (SetPartitioned), every outgoing
//     datagram is dropped and every incoming one is discarded by Receive and
//     Poll, so the process looks dead to its peers and they to it.
//   - Loss: with probability Loss the datagram is dropped.
//   - Corruption: with probability Corrupt one bit, chosen uniformly over
//     Head and Body, is flipped in a copy of the datagram.
//   - Duplication: with probability Duplicate the datagram is sent twice.
//   - Delay: with Delay or Jitter set, the datagram is held for Delay plus a
//     uniform random duration in [0, Jitter] and then sent by the port's
//     timer goroutine; different delays reorder datagrams on their own.
//   - Reordering: with probability Reorder the datagram is held back and
//     sent right after the ReorderAfter-th datagram that leaves after it,
//     or after ReorderDelay if fewer follow. With Delay or Jitter set, a
//     reordered datagram is instead held ReorderDelay longer than its delay.
//
// Send never keeps the caller's slices: what it holds back or alters is
// copied into pooled buffers first. Held datagrams still pending when the
// port closes are discarded, as a network would lose them.
//
// Counters of everything the port did are returned by Stats. Faults can be
// changed at any time with SetFaults; the random stream carries on unless
// the seed changes.
package faulty
