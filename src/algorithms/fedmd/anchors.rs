//! Who takes part in Phase 1 and what it draws (SXY22 §4.1 and App. C): the anchors `H`, the
//! faithful variant's fresh client sets `S_t`, the orthogonal- and power-iteration starts, each
//! drawn from its seed stream or supplied from a file and checked against the run.

use crate::engine::randomness::{AnchorsFile, Array, Randomness, Supplied};
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::linalg::random_orthonormal;
use crate::params::{FedMdParams, Phase1Variant, SubspaceMethod};
use crate::seed_streams::{stream, Purpose, Rng};
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;
use std::path::PathBuf;

/// Uniform random subset of `k` items of `pool` (partial Fisher–Yates with `rng.random_range`),
/// in draw order. Documented so that other implementations can reproduce it.
pub fn sample_without_replacement(pool: &[usize], k: usize, rng: &mut Rng) -> Vec<usize> {
    let mut v = pool.to_vec();
    let k = k.min(v.len());
    for i in 0..k {
        let j = rng.random_range(i..v.len());
        v.swap(i, j);
    }
    v.truncate(k);
    v
}

/// Who takes part: anchors, and for the faithful variant the fresh client sets.
pub(super) struct Plan {
    pub(super) anchors: Vec<usize>,
    /// Practical: every client with n_i ≥ 2. Faithful: S_t for each t.
    pub(super) subspace_sets: Vec<Vec<usize>>,
    pub(super) excluded: usize,
}

/// Minimum `n_i` of an anchor, and what the requirement is called in errors.
pub(super) fn anchor_need(p: &FedMdParams) -> (usize, &'static str) {
    match p.variant {
        Phase1Variant::Practical => (
            p.anchor_min_samples.max(2),
            "anchor candidates (n_i ≥ anchor_min_samples)",
        ),
        Phase1Variant::Faithful => (
            2 * p.ell * p.iterations,
            "anchor candidates (n_i ≥ 2ℓT fresh samples)",
        ),
    }
}

/// Whether the subspace step runs the federated orthogonal iteration (and so draws `Q₀`): the
/// faithful variant always, the practical one with `subspace = orthogonal-iteration`.
pub fn uses_orthogonal_iteration(p: &FedMdParams) -> bool {
    p.variant == Phase1Variant::Faithful || p.subspace == SubspaceMethod::OrthogonalIteration
}

/// Draw the anchors `H` (and, faithful, the fresh sets `S_t`) from the Sampling stream 0:
/// `n_H` anchors uniformly without replacement among the eligible clients, then (faithful)
/// `m·T` clients among those with `n_i ≥ 2` outside `H`, cut into `T` consecutive sets of `m`.
pub(super) fn draw_plan(
    fed: &Federation,
    p: &FedMdParams,
    seed: u64,
) -> Result<(Vec<usize>, Vec<Vec<usize>>)> {
    let mut rng = stream(seed, Purpose::Sampling, 0);
    let m_total = fed.num_clients();
    let (need, purpose) = anchor_need(p);
    let eligible: Vec<usize> = (0..m_total).filter(|&i| fed.n(i) >= need).collect();
    if eligible.len() < p.anchors {
        return Err(FedmixError::NotEnoughClients {
            purpose: purpose.into(),
            found: eligible.len(),
            needed: p.anchors,
        });
    }
    let anchors = sample_without_replacement(&eligible, p.anchors, &mut rng);
    let sets = match p.variant {
        Phase1Variant::Practical => Vec::new(),
        Phase1Variant::Faithful => {
            let pool: Vec<usize> = (0..m_total)
                .filter(|&i| fed.n(i) >= 2 && !anchors.contains(&i))
                .collect();
            if pool.len() < p.m * p.iterations {
                return Err(FedmixError::NotEnoughClients {
                    purpose: "fresh clients S_t (m per iteration, n_i ≥ 2, not anchors)".into(),
                    found: pool.len(),
                    needed: p.m * p.iterations,
                });
            }
            let drawn = sample_without_replacement(&pool, p.m * p.iterations, &mut rng);
            drawn.chunks(p.m).map(<[usize]>::to_vec).collect()
        }
    };
    Ok((anchors, sets))
}

/// Check a supplied `anchors.json` against the run: variant, `n_H` ids in range, distinct and
/// eligible; faithful: `T` sets of `m` clients with `n_i ≥ 2`, no anchor, no client twice.
pub(super) fn check_plan(
    fed: &Federation,
    p: &FedMdParams,
    file: &Supplied<AnchorsFile>,
) -> Result<(Vec<usize>, Vec<Vec<usize>>)> {
    let (src, f) = (&file.source, &file.value);
    let bad = |field: String, reason: String| FedmixError::InvalidRandomness {
        path: src.clone(),
        field,
        reason,
    };
    if f.variant != p.variant {
        return Err(bad(
            "variant".into(),
            format!(
                "{:?}, but the run's phase1_variant is {:?}",
                f.variant, p.variant
            )
            .to_lowercase(),
        ));
    }
    if f.anchors.len() != p.anchors {
        return Err(bad(
            "anchors".into(),
            format!(
                "{} ids, but the run uses n_H = {} anchors (set `anchors` = {} to use this file)",
                f.anchors.len(),
                p.anchors,
                f.anchors.len()
            ),
        ));
    }
    let m_total = fed.num_clients();
    let mut seen: Vec<Option<String>> = vec![None; m_total];
    let mut take = |field: String, id: i128, min_n: usize, role: &str| -> Result<usize> {
        let i = usize::try_from(id)
            .ok()
            .filter(|&i| i < m_total)
            .ok_or_else(|| FedmixError::ClientIdOutOfRange {
                path: src.clone(),
                field: field.clone(),
                id,
                clients: m_total,
            })?;
        if let Some(prev) = &seen[i] {
            return Err(bad(
                field,
                format!("client {i} appears twice (also at `{prev}`); every id must be distinct"),
            ));
        }
        if fed.n(i) < min_n {
            return Err(bad(
                field,
                format!(
                    "client {i} has n_i = {} samples, but {role} need n_i ≥ {min_n}",
                    fed.n(i)
                ),
            ));
        }
        seen[i] = Some(field);
        Ok(i)
    };
    let (need, _) = anchor_need(p);
    let anchors = f
        .anchors
        .iter()
        .enumerate()
        .map(|(a, &id)| take(format!("anchors[{a}]"), id, need, "anchors"))
        .collect::<Result<Vec<usize>>>()?;
    let sets = match (p.variant, &f.client_sets) {
        (Phase1Variant::Practical, None) => Vec::new(),
        (Phase1Variant::Practical, Some(_)) => {
            return Err(bad(
                "client_sets".into(),
                "the practical variant draws no client sets (every client with n_i ≥ 2 takes \
                 part); omit the field"
                    .into(),
            ))
        }
        (Phase1Variant::Faithful, None) => {
            return Err(bad(
                "client_sets".into(),
                format!(
                    "missing: the faithful variant needs T = {} sets of m = {} fresh clients",
                    p.iterations, p.m
                ),
            ))
        }
        (Phase1Variant::Faithful, Some(sets)) => {
            if sets.len() != p.iterations {
                return Err(bad(
                    "client_sets".into(),
                    format!(
                        "{} sets, but the run has T = phase1_iterations = {}",
                        sets.len(),
                        p.iterations
                    ),
                ));
            }
            let mut out = Vec::with_capacity(sets.len());
            for (t, set) in sets.iter().enumerate() {
                if set.len() != p.m {
                    return Err(bad(
                        format!("client_sets[{t}]"),
                        format!("{} clients, but the run uses m = {}", set.len(), p.m),
                    ));
                }
                out.push(
                    set.iter()
                        .enumerate()
                        .map(|(j, &id)| {
                            take(format!("client_sets[{t}][{j}]"), id, 2, "fresh clients")
                        })
                        .collect::<Result<Vec<usize>>>()?,
                );
            }
            out
        }
    };
    Ok((anchors, sets))
}

impl Plan {
    pub(super) fn new(
        fed: &Federation,
        p: &FedMdParams,
        seed: u64,
        given: &Randomness,
    ) -> Result<Self> {
        let m_total = fed.num_clients();
        let excluded = (0..m_total).filter(|&i| fed.n(i) < 2).count();
        let (anchors, sets) = match &given.anchors {
            Some(file) => check_plan(fed, p, file)?,
            None => draw_plan(fed, p, seed)?,
        };
        let subspace_sets = match p.variant {
            Phase1Variant::Practical => vec![(0..m_total).filter(|&i| fed.n(i) >= 2).collect()],
            Phase1Variant::Faithful => sets,
        };
        if let Some(q0) = &given.q0 {
            check_q0(fed, p, anchors.len(), q0)?;
        }
        if let Some(v0) = &given.power_start {
            check_power_start(p, anchors.len(), v0)?;
        }
        Ok(Self {
            anchors,
            subspace_sets,
            excluded,
        })
    }
}

/// Check a supplied `q0.npy`: used at all, shape `T × n_H × d × k`, every `Q₀` orthonormal
/// (finiteness is checked when the file is read).
pub(super) fn check_q0(
    fed: &Federation,
    p: &FedMdParams,
    h: usize,
    q0: &Supplied<Array>,
) -> Result<()> {
    let bad = |field: String, reason: String| FedmixError::InvalidRandomness {
        path: q0.source.clone(),
        field,
        reason,
    };
    if !uses_orthogonal_iteration(p) {
        return Err(bad(
            "q0".into(),
            "the practical Phase 1 with subspace = svd draws no Q₀ (set \
             subspace=orthogonal-iteration, or drop --q0)"
                .into(),
        ));
    }
    let (d, k) = (fed.d(), p.k);
    let want = [p.iterations, h, d, k];
    if q0.value.shape != want {
        return Err(bad(
            "q0".into(),
            format!(
                "shape {:?}, expected {want:?} (phase1_iterations × anchors × d × k)",
                q0.value.shape
            ),
        ));
    }
    for (idx, chunk) in q0.value.data.chunks_exact(d * k).enumerate() {
        let q = DMatrix::from_row_slice(d, k, chunk);
        let dev = crate::prec::amax_nan(&(q.tr_mul(&q) - DMatrix::<f64>::identity(k, k)));
        if !(dev <= crate::prec::ORTHONORMAL_TOL) {
            return Err(bad(
                format!("q0[{}][{}]", idx / h, idx % h),
                format!(
                    "columns are not orthonormal (max|QᵀQ − I| = {dev:.3e} > {:e})",
                    crate::prec::ORTHONORMAL_TOL
                ),
            ));
        }
    }
    Ok(())
}

/// Check a supplied `power_start.npy`: shape `T × n_H × k`, no zero vector.
pub(super) fn check_power_start(p: &FedMdParams, h: usize, v0: &Supplied<Array>) -> Result<()> {
    let bad = |field: String, reason: String| FedmixError::InvalidRandomness {
        path: v0.source.clone(),
        field,
        reason,
    };
    let want = [p.iterations, h, p.k];
    if v0.value.shape != want {
        return Err(bad(
            "power_start".into(),
            format!(
                "shape {:?}, expected {want:?} (phase1_iterations × anchors × k)",
                v0.value.shape
            ),
        ));
    }
    if let Some(idx) = v0
        .value
        .data
        .chunks_exact(p.k)
        .position(|c| c.iter().all(|&x| x == 0.0))
    {
        return Err(bad(
            format!("power_start[{}][{}]", idx / h, idx % h),
            "zero vector (a power-iteration start must be non-zero)".into(),
        ));
    }
    Ok(())
}

/// Stream index of anchor `a`'s draws at iteration `t` (`h` anchors): `Q₀` uses
/// `stream(seed, Subspace, 2(t·h + a))`, the power-iteration start the next index.
pub(super) fn subspace_index(t: usize, a: usize, h: usize) -> u64 {
    2 * (t * h + a) as u64
}

/// The start `Q₀` (`d × k`) of anchor `a`'s orthogonal iteration at iteration `t`: the
/// supplied `q0[t][a]`, or a uniformly random frame from the Subspace stream.
pub(super) fn q0_at(
    d: usize,
    p: &FedMdParams,
    t: usize,
    a: usize,
    h: usize,
    seed: u64,
    given: &Randomness,
) -> Result<DMatrix<f64>> {
    match &given.q0 {
        Some(q) => {
            let n = d * p.k;
            let start = (t * h + a) * n;
            Ok(DMatrix::from_row_slice(
                d,
                p.k,
                &q.value.data[start..start + n],
            ))
        }
        None => random_orthonormal(
            d,
            p.k,
            &mut stream(seed, Purpose::Subspace, subspace_index(t, a, h)),
        ),
    }
}

/// The start `v₀` (`k`) of anchor `a`'s power iteration at iteration `t`: the supplied
/// `power_start[t][a]`, or `k` standard normals from the Subspace stream.
pub(super) fn power_start_at(
    p: &FedMdParams,
    t: usize,
    a: usize,
    h: usize,
    seed: u64,
    given: &Randomness,
) -> DVector<f64> {
    match &given.power_start {
        Some(v) => {
            let start = (t * h + a) * p.k;
            DVector::from_column_slice(&v.value.data[start..start + p.k])
        }
        None => {
            let mut vrng = stream(seed, Purpose::Subspace, subspace_index(t, a, h) + 1);
            DVector::from_fn(p.k, |_, _| vrng.sample::<f64, _>(StandardNormal))
        }
    }
}

/// Every random draw Phase 1 would make (anchors and client sets, `Q₀` when the orthogonal
/// iteration runs, power-iteration starts), taking what `given` supplies as is: what
/// `--export-randomness` writes. [`super::run_fedmd_with`] fed this result reproduces
/// [`super::run_fedmd_with`] fed `given` bit for bit.
///
/// # Errors
/// As [`super::run_fedmd_with`]'s parameter and plan checks.
pub fn phase1_randomness(
    fed: &Federation,
    p: &FedMdParams,
    seed: u64,
    given: &Randomness,
) -> Result<Randomness> {
    precheck(fed, p)?;
    let plan = Plan::new(fed, p, seed, given)?;
    let h = plan.anchors.len();
    let (d, k, tt) = (fed.d(), p.k, p.iterations);
    let drawn = PathBuf::from(format!("<drawn from seed {seed}>"));
    let anchors = AnchorsFile {
        variant: p.variant,
        anchors: plan.anchors.iter().map(|&i| i as i128).collect(),
        client_sets: (p.variant == Phase1Variant::Faithful).then(|| {
            plan.subspace_sets
                .iter()
                .map(|s| s.iter().map(|&i| i as i128).collect())
                .collect()
        }),
    };
    let mut q0 = None;
    if uses_orthogonal_iteration(p) {
        let mut data = Vec::with_capacity(tt * h * d * k);
        for t in 0..tt {
            for a in 0..h {
                let q = q0_at(d, p, t, a, h, seed, given)?;
                data.extend(q.transpose().iter().copied());
            }
        }
        q0 = Some(Supplied {
            source: drawn.clone(),
            value: Array {
                shape: vec![tt, h, d, k],
                data,
            },
        });
    }
    let mut data = Vec::with_capacity(tt * h * k);
    for t in 0..tt {
        for a in 0..h {
            data.extend(power_start_at(p, t, a, h, seed, given).iter().copied());
        }
    }
    Ok(Randomness {
        anchors: Some(given.anchors.clone().unwrap_or_else(|| Supplied {
            source: drawn.clone(),
            value: anchors,
        })),
        q0: given.q0.clone().or(q0),
        power_start: Some(given.power_start.clone().unwrap_or_else(|| Supplied {
            source: drawn.clone(),
            value: Array {
                shape: vec![tt, h, k],
                data,
            },
        })),
        ..Randomness::default()
    })
}

/// Parameter checks shared by [`super::run_fedmd_with`] and [`phase1_randomness`].
pub(super) fn precheck(fed: &Federation, p: &FedMdParams) -> Result<()> {
    p.check()?;
    if p.k > fed.d() {
        return Err(FedmixError::invalid(
            "k",
            p.k,
            format!("must be ≤ d = {}", fed.d()),
        ));
    }
    Ok(())
}
