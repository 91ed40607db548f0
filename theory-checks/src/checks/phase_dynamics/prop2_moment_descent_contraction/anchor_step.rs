//! The step SXY22 Proposition 2 is about, composed by the check (Phase 1 pseudocode, steps
//! 11–15, given `Û`), and its equality with the library's `run_fedmd` on an instance where the
//! two must agree to rounding.

use super::*;

/// Largest allowed `‖composed step − run_fedmd's step‖` in [`library_step_deviation`].
pub const LIBRARY_STEP_TOL: f64 = 1e-10;

/// The outcome of one anchor step (SXY22 Phase 1, steps 11–15, given `Û`).
#[derive(Clone, Debug)]
pub struct AnchorStep {
    /// `θ_{t+1}`.
    pub theta_next: DVector<f64>,
    /// `σ̂² = σ₁(A)`.
    pub sigma_hat_sq: f64,
}

/// Steps 11–15 of SXY22 Phase 1 for the anchor `client` at `theta` with subspace `u_hat`: eq. 2's
/// `A` from samples `0..ℓ` and `ℓ..2ℓ`, power iteration from `v0`, the sign rule and the step
/// `η = eta_scale · ασ̂/β²` (the algorithm's `eta_scale = 1/2`).
#[allow(clippy::too_many_arguments)]
pub fn anchor_step(
    fed: &Federation,
    client: usize,
    theta: &DVector<f64>,
    u_hat: &DMatrix<f64>,
    ell: usize,
    (alpha, beta): (f64, f64),
    eta_scale: f64,
    v0: &DVector<f64>,
) -> AnchorStep {
    let e1 = residual_moments(fed, client, theta, 0..ell);
    let e2 = residual_moments(fed, client, theta, ell..2 * ell);
    let a = (u_hat.tr_mul(&e1)) * (u_hat.tr_mul(&e2)).transpose() / ell as f64;
    let g_bar = (e1.column_sum() + e2.column_sum()) / (2 * ell) as f64;
    let (mut beta_hat, lambda) = power_iteration(&(&a * a.transpose()), v0, T2);
    if beta_hat.dot(&u_hat.tr_mul(&g_bar)) < 0.0 {
        beta_hat.neg_mut();
    }
    let sigma_hat_sq = lambda.max(0.0).sqrt();
    let eta = eta_scale * alpha * sigma_hat_sq.sqrt() / (beta * beta);
    AnchorStep {
        theta_next: theta + u_hat * beta_hat * eta,
        sigma_hat_sq,
    }
}

/// `max_a ‖composed step − run_fedmd's one-step update‖` for each anchor `a` (practical variant,
/// first-two pairing, direct SVD, two-sample clients: then `A` is rank one and power iteration
/// is exact after one step, whatever its start, so the two must agree to rounding). `∞` when
/// `run_fedmd` returns an error.
pub fn library_step_deviation() -> f64 {
    let mix = Mixture::gaussian(6, 3, 1.0, 0.1, 7);
    let labels: Vec<usize> = (0..60).map(|i| i % 3).collect();
    let fed = mix.federation(&labels, &[2; 60], 7);
    let p = FedMdParams {
        variant: Phase1Variant::Practical,
        k: 3,
        anchors: 4,
        iterations: 1,
        t1: 2,
        t2: 50,
        m: 1,
        ell: 1,
        epsilon: 0.0,
        // Tiny Δ: no two anchors are linked, so the k-component rule cannot fail.
        separation: Some(1e-9),
        alpha: 0.7,
        beta: 1.3,
        pairing: Pairing::FirstTwo,
        subspace: SubspaceMethod::Svd,
        anchor_min_samples: 2,
    };
    let theta0 = DVector::from_fn(6, |r, _| 0.3 - 0.1 * r as f64);
    // An error of `run_fedmd` on this valid instance is a library fault: maximal deviation.
    let Ok(out) = run_fedmd(&fed, &p, &theta0, 11, &mut Recorder::quiet()) else {
        return f64::INFINITY;
    };
    let set: Vec<usize> = (0..60).collect();
    let y = subspace_matrix(&fed, &set, &theta0, Pairing::FirstTwo);
    let u_hat = top_k_left_singular(&y, 3).expect("k ≤ d");
    let mut worst: f64 = 0.0;
    for (a, &client) in out.anchors.iter().enumerate() {
        let v0 = DVector::from_vec(vec![0.3, -1.0, 0.5]);
        let step = anchor_step(&fed, client, &theta0, &u_hat, 1, (0.7, 1.3), 0.5, &v0);
        let diff = (&step.theta_next - out.anchor_models.column(a)).norm();
        worst = max_nan(worst, diff);
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The composed step equals `run_fedmd`'s one-step update (practical variant, first-two
    /// pairing, direct SVD, two-sample clients: then `A` is rank one and power iteration is exact
    /// after one step, whatever its start).
    #[test]
    fn composed_step_matches_run_fedmd() {
        assert!(library_step_deviation() < LIBRARY_STEP_TOL);
    }
}
