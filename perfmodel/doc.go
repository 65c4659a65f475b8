// Package perfmodel builds measured analytical performance models of
// message-passing programs and predicts their run times.
//
// The method follows five steps:
//
//  1. Instrument: a Recorder times named code regions (Region.Start and
//     Stop) and records each sample with the region's size parameters: the
//     problem size n (or message size m) and the process count p.
//  2. Select: Summarize groups the samples of a region by (n, p) and drops
//     anomalies with a robust rule (Rule: farther from the group's median
//     than K scaled median absolute deviations), keeping the mean of the rest.
//  3. Fit: Fit finds by least squares the coefficients of a model that is
//     linear in its parameters — Linear (a + b·m, the communication model),
//     Poly (nested loops as a polynomial in n) or a two-variable Form in n
//     and p (terms n^i·p^j, with j < 0 for 1/p) — and reports its goodness
//     of fit (R², adjusted R², RMSE, worst relative residual).
//  4. Compose: a Program sums region models, each evaluated at arguments and
//     counted a number of times derived from (n, p), into a model of the
//     whole program.
//  5. Predict: Model.Predict and Program.Predict give a time with a standard
//     error for unmeasured n and p; VRP turns per-machine models into the
//     relative performance vector that splits work among machines.
//
// Models save and load as JSON (Set). Package perfplot draws measured
// points beside model curves; it is a package of its own so that programs
// that only fit and predict do not link the plotting library.
package perfmodel
