// Package distribute splits the work of a master/worker program among
// workers of different speeds, over pcor threads.
//
// The work is Total units (rows of a matrix, tiles of a view), handed out
// as ranges [Lo, Hi). The master keeps one pcor thread per worker; each
// sends its worker a range (with the input Plan.Input makes for it), waits
// for the result, gives it to Plan.Collect and asks the strategy for the
// next range, until none is left. A worker whose receive fails (it left:
// ErrPeerDown) or who misses its deadline is given up: the range it held
// goes back to the pool for the others, and whatever it answers later is
// ignored, so every unit is collected exactly once.
//
// The strategies are those of PEMPIs-Het:
//
//   - SS (self-scheduling): a worker gets Chunk units (default 1) each
//     time it asks.
//   - GSS (guided self-scheduling): a worker gets ⌈R/P⌉ of the R units
//     left, P the number of workers.
//   - Static: each worker gets one range of Δ_i ≈ ul·VRP[i] units (Shares),
//     ul = Total/ΣVRP, all at the start; with no VRP, an even split.
//   - VRPSS: the work goes out in phases as in SS, each range sized by the
//     VRP: worker i gets ⌈ul·VRP[i]⌉ units with ul = Total/(Phases·ΣVRP),
//     and no more than its VRP share of the work not done, ⌈R·VRP[i]/ΣVRP⌉
//     with R the units left and those the others hold (in one phase, the
//     static VRP split). Phases picks the phase count from the models.
//
// The VRP (relative performance vector: how many times each worker is
// faster than the slowest) comes from fitted per-worker models
// (perfmodel.VRP), for example ones measured by Calibrate or loaded from
// JSON.
package distribute
