//! Writes the two constructed candidates of `docs/validating.md` ("One-step mode") on the golden
//! federation (`tests/data/golden/`), Phase 2 FedAvg with `s = 1`, `η = 0.05`, 12 rounds from
//! `theta0.npy`:
//! - `OUT/flipped/`: a correct implementation that breaks one choice differently — the
//!   reference's rounds 1–2, round 3 with client 4 moved to the next cluster, then the
//!   reference's round function from its own models (`tests/one_step.rs` builds the same);
//! - `OUT/step2/`: the reference run with `η = 0.1` (a step twice the reference's).
//!
//! `cargo run --release --example one_step_candidates -- OUT`, then `fedmix validate` with and
//! without `--one-step` as in `docs/validating.md`.

use fedmix::algorithms::fedx_clustering::phase2_round_fused;
use fedmix::algorithms::AlgorithmParams;
use fedmix::engine::recorder::Recorder;
use fedmix::io::{read_dataset, read_f64, write_f64, write_i64};
use fedmix::params::AlgorithmKind;
use nalgebra::DMatrix;
use std::path::{Path, PathBuf};

/// `rounds × k × d` models and `rounds × M` labels into `dir`.
fn write(dir: &Path, models: &[DMatrix<f64>], labels: &[Vec<usize>]) -> fedmix::error::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| fedmix::error::FedmixError::io(dir, e))?;
    let (d, k) = models[0].shape();
    let flat: Vec<f64> = models.iter().flat_map(|m| m.as_slice().to_vec()).collect();
    write_f64(&dir.join("iterates.npy"), &[models.len(), k, d], &flat)?;
    let l: Vec<i64> = labels.iter().flatten().map(|&x| x as i64).collect();
    write_i64(
        &dir.join("labels.npy"),
        &[labels.len(), labels[0].len()],
        &l,
    )
}

fn main() -> fedmix::error::Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "one-step".into()));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden");
    let ds = read_dataset(&root.join("dataset"))?;
    let fed = &ds.train;
    let (_, t0) = read_f64(&root.join("theta0.npy"), &[Some(3), Some(fed.d())])?;
    let theta0 = DMatrix::from_vec(fed.d(), 3, t0);
    let params = |eta: &str| {
        let sets = [("eta", eta), ("local_steps", "1"), ("rounds", "12")]
            .map(|(k, v)| (k.to_string(), v.to_string()));
        AlgorithmParams::from_sources(AlgorithmKind::Phase2, None, &sets)
    };
    let p = params("0.05")?.phase2(fed);
    let (mut theta, mut models, mut labels) = (theta0.clone(), Vec::new(), Vec::new());
    for round in 1..=p.rounds {
        let (mut next, mut l) = phase2_round_fused(fed, &theta, &p, None, None);
        if round == 3 {
            l[4] = (l[4] + 1) % theta.ncols();
            next = phase2_round_fused(fed, &theta, &p, None, Some(&l)).0;
        }
        theta = next;
        models.push(theta.clone());
        labels.push(l);
    }
    write(&out.join("flipped"), &models, &labels)?;
    let alg = fedmix::algorithms::registry::build(&params("0.1")?, Some(theta0), None);
    let mut rec = Recorder::new(true);
    alg.run(fed, 0, &mut rec)?;
    write(&out.join("step2"), &rec.iterates, &rec.labels)
}
