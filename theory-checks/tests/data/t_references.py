"""Student-t references of the checks' prediction tolerances (mpmath 1.3, 30 digits).

`prediction_tolerance(sd, n, a, two_sided) = t_{n-1}^{-1}(1 - a') * sd * sqrt(1 + 1/n)`,
a' = a/2 when two-sided; each check's α is 0.01 / (number of checks). The t quantile is the
root of the regularised incomplete beta form of the t CDF. Usage: python3 t_references.py 24
"""
import sys
from mpmath import mp, mpf, betainc, findroot, sqrt, exp

mp.dps = 30


def t_cdf(x, nu):
    return 1 - betainc(nu / 2, mpf(1) / 2, 0, nu / (nu + x * x), regularized=True) / 2


def t_ppf(q, nu):
    return findroot(lambda x: t_cdf(x, nu) - q, mpf(4))


def tol(sd, n, a, two_sided):
    a = a / 2 if two_sided else a
    return t_ppf(1 - a, mpf(n - 1)) * mpf(sd) * sqrt(1 + mpf(1) / n)


def refs(checks):
    al = mpf("0.01") / checks
    out = {}
    out["srfca rate_tolerance"] = tol("0.089", 30, al / 2, False)
    out["theorem3 safety"] = exp(mpf("0.135") + tol("0.324", 20, al / 2, False))
    out["theorem3 slope quick"] = tol("2.7e-6", 20, al / 2, True)
    out["theorem3 slope full"] = tol("5.71e-6", 20, al / 2, True)
    out["theorem2_misclustering safety"] = exp(mpf("0.099") + tol("0.074", 20, al / 2, False))
    out["theorem2_misclustering slope"] = tol("0.041", 20, al / 2, False)
    for i, (sd, two) in enumerate(
        zip(["0.0080", "0.0068", "0.0338", "0.0039"], [False, False, True, True])
    ):
        out[f"theorem2_phase2 slope {i}"] = tol(sd, 20, al / 4, two)
    for prof, sds in [("quick", ["0.013", "0.040", "0.019"]), ("full", ["0.0058", "0.0097", "0.0089"])]:
        for name, sd, two in zip(["m", "chi", "dk"], sds, [True, False, False]):
            out[f"eq32 {prof} {name}"] = tol(sd, 20, al / 3, two)
    return out


if __name__ == "__main__":
    for k, v in refs(int(sys.argv[1])).items():
        print(f"{k:35s} {mp.nstr(v, 17)}")
