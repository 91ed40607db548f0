//! Why the practical Phase 1 (SXY22 App. C: "Phase 1 reuses local data", all clients in the
//! subspace step) can diverge when the data are scarce relative to d (IFCA Fig. 3(c)'s
//! m = n = 50, d = 1000: N/d = 2.5).
//!
//! An anchor's step length is `α σ̂ / (2β²)` with `σ̂² = σ₁(Ûᵀ U Û)`, `U` its cross-moment
//! U-statistic (SXY22 eq. 2, Phase 1 steps 10–12). With Û independent of the anchor's samples,
//! `E[Ûᵀ U Û] = Ûᵀ(θ* − θ)(θ* − θ)ᵀÛ`, so `σ̂ ≤ ‖θ − θ*‖` up to sampling noise and a step moves
//! the anchor by at most half its error. When Û is estimated from data that include the
//! anchor's own samples and N is not ≫ d, the top-k subspace aligns with those samples: `Ûᵀx_s`
//! is inflated for them (for an independent Gaussian `x`, `E‖Ûᵀx‖² = k`), `σ̂` overestimates the
//! error, and a step overshoots — the anchor's error then grows geometrically, since `σ̂` scales
//! with it.
//!
//! For each m (n = 50, d = 1000, R = 0.1, σ = 0.1, k = 2; the `ifca-official` setting) and
//! seed, from Phase 1's start `θ ~ N(0, I/d)`, this prints, for anchor = client 0:
//! `‖Ûᵀx_s‖²` averaged over the anchor's samples, with Û from **all** clients (reuse, as the
//! practical variant does) and from **all but the anchor** (held out); and `σ̂ / ‖θ − θ*‖` under
//! both. Run: `cargo run --release --example phase1_data_reuse`.

use fedmix::algorithms::fedmd::{pair_moments, residual_moments, subspace_basis};
use fedmix::engine::init::random_init;
use fedmix::federation::Federation;
use fedmix::params::Pairing;
use fedmix::synthetic::generate_named;
use nalgebra::{DMatrix, DVector};

const K: usize = 2;

/// Mean over client `i`'s samples of `‖Ûᵀ x_s‖²`.
fn projected_energy(fed: &Federation, i: usize, u: &DMatrix<f64>) -> f64 {
    let p = u.tr_mul(&fed.x(i));
    p.column_iter().map(|c| c.norm_squared()).sum::<f64>() / fed.n(i) as f64
}

/// `σ̂ = σ₁(Ûᵀ U Û)^{1/2}` of client `i` at `theta` (SXY22 Phase 1 step 11, practical pairing).
fn sigma_hat(fed: &Federation, i: usize, theta: &DVector<f64>, u: &DMatrix<f64>) -> f64 {
    let e = residual_moments(fed, i, theta, 0..fed.n(i));
    let (a, b) = pair_moments(&e, Pairing::AllPairs);
    let m = u.tr_mul(&a) * u.tr_mul(&b).transpose();
    m.singular_values().max().sqrt()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("Anchor = client 0, n = 50, d = 1000, start θ ~ N(0, I/d):\n");
    println!("| m | N/d | seed | ‖Ûᵀx‖² reuse | ‖Ûᵀx‖² held out | σ̂/err reuse | σ̂/err held out |");
    println!("|---|---|---|---|---|---|---|");
    for m in [50usize, 100, 200, 400] {
        for seed in 1..=5u64 {
            let sets: Vec<(String, String)> = [
                ("r", "0.1"),
                ("sigma", "0.1"),
                ("clients", &m.to_string()),
                ("samples", "50"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
            let data = generate_named("ifca-official", seed, &sets)?;
            let fed = &data.train;
            let d = fed.d();
            let theta: DVector<f64> = random_init(d, 1, 1.0, seed, 0).column(0).into_owned();
            let star = fed.theta_star().ok_or("no θ*")?;
            let label = fed.labels().ok_or("no labels")?[0];
            let err = (&theta - star.column(label)).norm();
            let all: Vec<usize> = (0..fed.num_clients()).collect();
            let others: Vec<usize> = (1..fed.num_clients()).collect();
            let u_reuse = subspace_basis(fed, &all, &theta, Pairing::AllPairs, K)?;
            let u_held = subspace_basis(fed, &others, &theta, Pairing::AllPairs, K)?;
            println!(
                "| {m} | {:.1} | {seed} | {:.2} | {:.2} | {:.2} | {:.2} |",
                fed.total_samples() as f64 / d as f64,
                projected_energy(fed, 0, &u_reuse),
                projected_energy(fed, 0, &u_held),
                sigma_hat(fed, 0, &theta, &u_reuse) / err,
                sigma_hat(fed, 0, &theta, &u_held) / err,
            );
        }
    }
    // The feedback once the anchor's error lies in the span of its own samples: there its
    // sample covariance `X Xᵀ/n` has the eigenvalues of the n × n Gram matrix `XᵀX/n`, ≈ d/n
    // (Marchenko–Pastur: d/n (1 ± √(n/d))²) instead of the population's 1 = β, so σ̂ measures
    // the error amplified by λ and the step `σ̂/2` overshoots: `|1 − λ/2|` per iteration.
    println!(
        "\nAn anchor's sample covariance on the span of its own n samples (d = 1000, seed 1):\n"
    );
    println!("| n | d/n | λ min | λ mean | λ max | predicted growth per iteration |λ̄/2 − 1| |");
    println!("|---|---|---|---|---|---|");
    for n in [50usize, 100, 200] {
        let sets: Vec<(String, String)> = [("r", "0.1"), ("sigma", "0.1"), ("clients", "50")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(std::iter::once(("samples".to_string(), n.to_string())))
            .collect();
        let data = generate_named("ifca-official", 1, &sets)?;
        let x = data.train.x(0);
        let gram = x.tr_mul(&x) / n as f64;
        let ev = gram.symmetric_eigenvalues();
        let mean = ev.mean();
        println!(
            "| {n} | {:.0} | {:.1} | {mean:.1} | {:.1} | {:.1} |",
            data.train.d() as f64 / n as f64,
            ev.min(),
            ev.max(),
            (mean / 2.0 - 1.0).abs()
        );
    }
    Ok(())
}
