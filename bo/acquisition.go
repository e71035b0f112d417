package bo

import "math"

// Acquisition function names accepted by Config.Acquisition.
const (
	GPHedge = "gp_hedge" // portfolio of EI, PI and LCB (Hoffman, Brochu & de Freitas 2011)
	EI      = "EI"       // expected improvement
	PI      = "PI"       // probability of improvement
	LCB     = "LCB"      // lower confidence bound
)

// Default acquisition parameters, as in scikit-optimize.
const (
	DefaultXi    = 0.01 // EI and PI improvement margin ξ, in units of y
	DefaultKappa = 1.96 // LCB exploration weight κ
	DefaultEta   = 1.0  // GP-Hedge softmax inverse temperature η
)

// ExpectedImprovement returns the expected improvement below best − xi of a
// normal posterior with the given mean and standard deviation (Jones,
// Schonlau & Welch 1998, eq. 15, for minimization):
//
//	EI = (best − xi − mean) Φ(z) + std φ(z),  z = (best − xi − mean)/std,
//
// and max(best − xi − mean, 0) if std is 0.
func ExpectedImprovement(mean, std, best, xi float64) float64 {
	v, _, _ := acqEI(mean, std, best-xi)
	return v
}

// ProbabilityOfImprovement returns P(f < best − xi) = Φ((best − xi − mean)/std)
// for a normal posterior (Kushner 1964); for std 0 it is 1 if mean < best − xi
// and 0 otherwise.
func ProbabilityOfImprovement(mean, std, best, xi float64) float64 {
	v, _, _ := acqPI(mean, std, best-xi)
	return v
}

// LowerConfidenceBound returns mean − kappa·std (Srinivas et al. 2010, for
// minimization). The optimizer maximizes its negation.
func LowerConfidenceBound(mean, std, kappa float64) float64 {
	return mean - kappa*std
}

// minStd is the posterior standard deviation below which EI and PI are
// evaluated as if the posterior were deterministic.
const minStd = 1e-12

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func normPDF(z float64) float64 { return math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi) }

// acqEI returns EI with target t = best − xi, and its partial derivatives with
// respect to the mean and the standard deviation:
// ∂EI/∂μ = −Φ(z), ∂EI/∂σ = φ(z).
func acqEI(mu, sd, t float64) (v, dmu, dsd float64) {
	imp := t - mu
	if sd < minStd {
		if imp > 0 {
			return imp, -1, 0
		}
		return 0, 0, 0
	}
	z := imp / sd
	cdf, pdf := normCDF(z), normPDF(z)
	return imp*cdf + sd*pdf, -cdf, pdf
}

// acqPI returns PI with target t = best − xi and its partial derivatives:
// ∂PI/∂μ = −φ(z)/σ, ∂PI/∂σ = −z φ(z)/σ.
func acqPI(mu, sd, t float64) (v, dmu, dsd float64) {
	imp := t - mu
	if sd < minStd {
		if imp > 0 {
			return 1, 0, 0
		}
		return 0, 0, 0
	}
	z := imp / sd
	pdf := normPDF(z)
	return normCDF(z), -pdf / sd, -z * pdf / sd
}

// acqNegLCB returns −LCB = −μ + κσ and its partial derivatives.
func acqNegLCB(mu, sd, kappa float64) (v, dmu, dsd float64) {
	return -mu + kappa*sd, -1, kappa
}
