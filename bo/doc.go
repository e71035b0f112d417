// Package bo is a Bayesian optimizer that minimizes a black-box function over
// a box, with an ask/tell interface: Optimizer.Suggest returns a point,
// the caller evaluates it and reports the value with Optimizer.Observe.
//
// # What it owns
//
// The package owns Gaussian-process regression (GP), the acquisition
// functions EI, PI, LCB and the GP-Hedge portfolio, their maximization over
// the box, and two standard test functions (Branin, Hartmann6). It knows
// nothing about what is being optimized: it imports no project package.
//
// # Units
//
// Points are in the caller's units, inside the box given by []Dim (inclusive
// bounds); a Dim with Step > 0 is quantized and every suggestion lies on its
// grid Low + k·Step. Internally the box is mapped onto the unit cube [0, 1]^d,
// where the GP length scales live. Observed values y are in the caller's
// units; the GP standardizes them (zero mean, unit variance) before fitting,
// so its signal and noise variances are relative to the variance of the
// observed y. Config.Xi and the GP-Hedge gains are in the units of y, as in
// scikit-optimize.
//
// # Algorithm
//
// The surrogate is a GP with a Matérn-5/2 kernel with one length scale per
// dimension (ARD), a signal variance and a Gaussian noise variance
// (Rasmussen & Williams 2006, eq. 4.17 and §5.1). Hyperparameters maximize
// the log marginal likelihood (eq. 2.30, gradient eq. 5.9) with gonum's
// L-BFGS from a warm start and Config.NRestarts random starts. Acquisition
// functions follow scikit-optimize's conventions for minimization: expected
// improvement (Jones, Schonlau & Welch 1998), probability of improvement
// (Kushner 1964) and lower confidence bound (Srinivas et al. 2010), combined
// by GP-Hedge (Hoffman, Brochu & de Freitas 2011). Each acquisition is
// maximized by evaluating it at Config.NCandidates uniform random points
// and polishing the best Config.NPolish of them with L-BFGS (gradient from
// the closed-form posterior derivatives), instead of scikit-optimize's
// "sampling" mode (10,000 points, no polish), to keep a suggestion cheap; see
// BenchmarkSuggest.
//
// # Determinism
//
// All randomness (initial points, candidates, hyperparameter restarts, the
// GP-Hedge draw) comes from the rand.Source passed to New, in a fixed order.
// There is no global random state, no clock, and no map iteration; floating
// point reductions run in a fixed order. The same source state and the same
// observations give the same suggestions, bit for bit on one platform.
//
// # Concurrency
//
// An Optimizer or a GP is not safe for concurrent use. Distinct values may be
// used from distinct goroutines.
//
// # Errors
//
// Constructors and methods validate their input and return errors prefixed
// "bo: "; bad input never panics and never changes state.
//
// # References
//
//   - C. E. Rasmussen and C. K. I. Williams, Gaussian Processes for Machine
//     Learning, MIT Press, 2006.
//   - D. R. Jones, M. Schonlau and W. J. Welch, Efficient global optimization
//     of expensive black-box functions, J. Global Optim. 13, 455–492, 1998.
//   - M. Hoffman, E. Brochu and N. de Freitas, Portfolio allocation for
//     Bayesian optimization, UAI 2011.
//   - H. J. Kushner, A new method of locating the maximum point of an
//     arbitrary multipeak curve in the presence of noise, J. Basic Eng. 86,
//     97–106, 1964.
//   - N. Srinivas, A. Krause, S. Kakade and M. Seeger, Gaussian process
//     optimization in the bandit setting, ICML 2010.
//   - L. C. W. Dixon and G. P. Szegő, The global optimization problem: an
//     introduction, in Towards Global Optimisation 2, 1978.
package bo
