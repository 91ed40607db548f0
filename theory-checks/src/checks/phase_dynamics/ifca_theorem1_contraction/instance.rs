//! The instance of the IFCA Theorem 1 check: two clusters at separation Δ, the library's IFCA
//! round on it, the contraction's excess over the bound, the errors, the gap and the floor
//! (GCYR20 §4, Theorem 1).

use super::*;
/// One grid point: k clusters (p = 1/k), dimension d, m machines × n' samples (cluster 0's
/// machines × `n0`, equal to `n` except at part A's sample-vs-client point), noise σ.
#[derive(Clone, Copy, Debug)]
pub(super) struct Inst {
    pub(super) k: usize,
    pub(super) d: usize,
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) n0: usize,
    pub(super) sigma: f64,
}

impl Inst {
    pub(super) fn p(&self) -> f64 {
        1.0 / self.k as f64
    }
    pub(super) fn mn(&self) -> f64 {
        (self.m * self.n) as f64
    }
    /// `(σ/p) √d (mn')^e` — eq. 1's floor for `e = −½`.
    pub(super) fn shape(&self, e: f64) -> f64 {
        self.sigma / self.p() * (self.d as f64).sqrt() * self.mn().powf(e)
    }
    pub(super) fn theta_star(&self) -> DMatrix<f64> {
        DMatrix::from_fn(self.d, self.k, |r, c| {
            if r == c {
                DELTA / 2f64.sqrt()
            } else {
                0.0
            }
        })
    }
    pub(super) fn labels(&self) -> Vec<usize> {
        (0..self.m).map(|i| i % self.k).collect()
    }
    pub(super) fn fed(&self, seed: u64) -> Federation {
        let labels = self.labels();
        let sizes: Vec<usize> = labels
            .iter()
            .map(|&z| if z == 0 { self.n0 } else { self.n })
            .collect();
        Mixture::with_theta(self.theta_star(), self.sigma).federation(&labels, &sizes, seed)
    }
    /// `N_0/N`: cluster 0's sample share.
    pub(super) fn sample_share0(&self) -> f64 {
        let m0 = self.labels().iter().filter(|&&z| z == 0).count();
        (m0 * self.n0) as f64 / (m0 * self.n0 + (self.m - m0) * self.n) as f64
    }
    pub(super) fn label(&self) -> String {
        format!(
            "k={} d={} m={} n'={} σ={}",
            self.k, self.d, self.m, self.n, self.sigma
        )
    }
}

/// Full participation, step `step` (library normalisation): option I's server step, or option
/// II's local step (τ = 1).
pub(super) fn params(k: usize, step: f64, option: IfcaOption) -> IfcaParams {
    let local = Phase2Params {
        eta: step,
        local_steps: 1,
        local_solver: LocalSolver::Fedavg,
        rounds: 1,
    };
    IfcaParams::at_step(k, option, local).expect("the check's steps are finite and positive")
}

/// One IFCA round on fresh data (option I unless `option` says otherwise): the new models and
/// the number of misclustered machines.
pub(super) fn round(
    inst: &Inst,
    theta: &DMatrix<f64>,
    step: f64,
    seed: u64,
) -> (DMatrix<f64>, usize) {
    round_with(inst, theta, step, seed, IfcaOption::Gradient)
}

pub(super) fn round_with(
    inst: &Inst,
    theta: &DMatrix<f64>,
    step: f64,
    seed: u64,
    option: IfcaOption,
) -> (DMatrix<f64>, usize) {
    let fed = inst.fed(seed);
    let all: Vec<usize> = (0..inst.m).collect();
    let (next, labels) = ifca_round(&fed, theta, &all, &params(inst.k, step, option), None);
    let wrong = labels
        .iter()
        .zip(inst.labels())
        .filter(|(a, b)| **a != *b)
        .count();
    (next, wrong)
}

/// Eq. 1's excess over the halving, `max_j (‖θ⁺_j − θ*_j‖ − ½‖θ_j − θ*_j‖)`, from the errors
/// after (`now`) and before (`prev`) a round: what the floor term must cover.
pub(super) fn contraction_excess(now: &[f64], prev: &[f64]) -> f64 {
    now.iter()
        .zip(prev)
        .map(|(a, b)| a - 0.5 * b)
        .fold(f64::NEG_INFINITY, max_nan)
}

/// Per-cluster errors `‖θ_j − θ*_j‖`.
pub(super) fn errors(theta: &DMatrix<f64>, ts: &DMatrix<f64>) -> Vec<f64> {
    (0..ts.ncols())
        .map(|j| (theta.column(j) - ts.column(j)).norm())
        .collect()
}

/// `θ* + dist · U` with random unit columns `U` from `stream(seed, Init, 0)`.
pub(super) fn start(ts: &DMatrix<f64>, dist: f64, seed: u64) -> DMatrix<f64> {
    let mut rng = stream(seed, Purpose::Init, 0);
    let mut th = ts.clone();
    for j in 0..ts.ncols() {
        th.set_column(
            j,
            &(ts.column(j) + random_unit(ts.nrows(), &mut rng) * dist),
        );
    }
    th
}

/// Part A: `1 − r` at `γp = g`, σ = 0, the worst of `starts` random starts; misclustered count.
pub(super) fn gap(cfg: &CheckConfig, inst: &Inst, g: f64, starts: usize, tag: u64) -> (f64, usize) {
    let ts = inst.theta_star();
    let mut r: f64 = 0.0;
    let mut wrong = 0;
    for s in 0..starts as u64 {
        let seed = child(cfg.seed, 31, tag * 1000 + s);
        let th = start(&ts, START_A * DELTA, seed);
        let (next, w) = round(inst, &th, g / inst.p(), seed);
        wrong += w;
        let ratio = errors(&next, &ts)
            .iter()
            .map(|e| e / (START_A * DELTA))
            .fold(0.0, max_nan);
        r = max_nan(r, ratio);
    }
    (1.0 - r, wrong)
}

/// Part B at one grid point: `(max, median)` over replicates of `max_j ‖θ⁺_j − θ*_j‖` after one
/// round from `θ*`, and the misclustered machines summed over replicates.
pub(super) fn floor(cfg: &CheckConfig, inst: &Inst, reps: usize, tag: u64) -> (f64, f64, usize) {
    let ts = inst.theta_star();
    let mut v = Vec::with_capacity(reps);
    let mut wrong = 0;
    for r in 0..reps as u64 {
        let (next, w) = round(
            inst,
            &ts,
            STEP_P / inst.p(),
            child(cfg.seed, 31, tag * 1000 + r),
        );
        wrong += w;
        v.push(errors(&next, &ts).into_iter().fold(0.0, max_nan));
    }
    let max = v.iter().copied().fold(0.0, max_nan);
    (max, quantile(&v, 0.5), wrong)
}
