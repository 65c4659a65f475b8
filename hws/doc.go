// Package hws is hierarchical work stealing for applications spread over
// groups of machines: which processes form a group, which process is each
// group's master, and the between-process stealing policies that decide who
// an idle process asks for work and which tasks may leave a group.
//
// # Groups
//
// A group is a set of processes joined by fast links; groups are joined by
// slow ones. By default (Discover) the groups come from the routing model:
// each process's home network is the network of its cheapest direct link
// (at a reference message size, with the routing package's costs), and the
// processes sharing a home network form a group. A process reached only
// through a gateway, or only over a slower link, therefore lands in another
// group. Groups may also be given explicitly (ParseGroups, the PCOR_GROUPS
// environment variable, pcorrun --groups).
//
// Each group's master is its lowest live process id, so every process that
// sees the same membership elects the same masters; when a master dies
// (Groups.Without, or a Tracker fed with directory events) the next lowest
// id of its group takes over.
//
// # Policies
//
// A Policy is pure decision code, driven the same way by the simulator
// (package hws/sim) and by a runtime: the caller keeps the task stacks and
// the messages; the policy says where a new or stolen task goes (Place),
// which stacks an idle process takes its next task from (Order), whom it
// asks for work (Next) and what a victim may give a thief (Serve).
//
//   - random: an idle process asks a process chosen uniformly among all
//     the others, and waits for the answer.
//   - crs (cluster-aware random stealing, from Satin): an idle process
//     keeps at most one asynchronous steal request outstanding to a random
//     process of another group and, meanwhile, asks processes of its own
//     group synchronously.
//   - hws (hierarchical work stealing): tasks created above a depth limit
//     are global and kept on the master's global stack; the others are
//     local and never leave their group. Masters steal global tasks from
//     each other (one asynchronous request outstanding) and hand them down
//     as local work to their group; members steal only inside their group.
//
// With hws the number of steals between groups is
// O(g·(D + max_i W_i/p_g)) (g groups of p_g processes, D the critical path,
// W_i the work of the i-th block below the depth limit), against O(p·D)
// for random stealing; Bound computes the former.
package hws
