//! Clustering quality: misclustering after the best label permutation (clients and samples),
//! the majority-vote variant, and label quality with unassigned clients.

use super::distance::hungarian;
use crate::error::{FedmixError, Result};
use nalgebra::DMatrix;
use serde::Serialize;

/// Misclustering rates up to the best label permutation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Misclustering {
    /// Fraction of clients misclustered.
    pub clients: f64,
    /// Fraction of samples misclustered (clients weighted by `n_i`).
    pub samples: f64,
    /// `map[l]` = true cluster matched to estimated label `l` (`None`: unmatched, all wrong).
    pub map: Vec<Option<usize>>,
}

/// Misclustering of estimated labels `est` (values `0..k_est`) against `truth` (`0..k`), with
/// client sizes `sizes` for the sample-weighted rate. The label map maximises the number of
/// correctly clustered clients, ties broken by the number of correctly clustered samples
/// (maximum-weight matching of the confusion matrix; with `k_est ≠ k` the surplus labels stay
/// unmatched). Both rates are invariant to renumbering the estimated clusters.
///
/// # Errors
/// Length mismatch between the three slices.
pub fn misclustering(est: &[usize], truth: &[usize], sizes: &[usize]) -> Result<Misclustering> {
    for (what, len) in [("true labels", truth.len()), ("client sizes", sizes.len())] {
        if len != est.len() {
            return Err(FedmixError::DimensionMismatch {
                what: format!("{what} vs estimated labels"),
                expected: est.len(),
                found: len,
            });
        }
    }
    check_label_range(est, "estimated labels")?;
    check_label_range(truth, "true labels")?;
    let k_est = est.iter().max().map_or(1, |m| m + 1);
    let k = truth.iter().max().map_or(1, |m| m + 1);
    let confusion = |w: &dyn Fn(usize) -> f64| {
        let mut c = DMatrix::zeros(k_est, k);
        for i in 0..est.len() {
            c[(est[i], truth[i])] += w(i);
        }
        c
    };
    let by_clients = confusion(&|_| 1.0);
    let by_samples = confusion(&|i| sizes[i] as f64);
    // Decision: several maps may tie on correctly clustered clients; among them take the one
    // with the most correctly clustered samples, so that `samples` does not depend on how the
    // estimated clusters happen to be numbered. Weights `clients·(N+1) + samples` make this a
    // single matching; they are integers, exact in f64 while M·(N+1) < 2^53.
    let scale = by_samples.sum() + 1.0;
    let map = best_label_map(&(&by_clients * scale + &by_samples));
    let rate = |c: &DMatrix<f64>| {
        let matched: f64 = map
            .iter()
            .enumerate()
            .filter_map(|(l, t)| t.map(|t| c[(l, t)]))
            .sum();
        let total = c.sum();
        if total > 0.0 {
            1.0 - matched / total
        } else {
            0.0
        }
    };
    Ok(Misclustering {
        clients: rate(&by_clients),
        samples: rate(&by_samples),
        map,
    })
}

/// Largest label value accepted by [`misclustering`]: labels index a confusion matrix, so a
/// label such as [`crate::metrics::UNASSIGNED`] (`usize::MAX`) must be refused typed rather than
/// overflow or allocate absurdly.
pub const MAX_LABEL: usize = 1 << 20;

fn check_label_range(labels: &[usize], what: &str) -> Result<()> {
    match labels.iter().position(|&l| l > MAX_LABEL) {
        Some(client) => Err(FedmixError::invalid(
            what,
            labels[client],
            format!("client {client}: labels must be ≤ {MAX_LABEL} (unassigned clients need majority_misclustering)"),
        )),
        None => Ok(()),
    }
}

/// Misclustering under SRFCA Definition 3.1 (cluster labels by majority), for clusterings whose
/// number of clusters `K̂` differs from `k` (SR-FCA, CFL) or that leave clients unassigned.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MajorityMisclustering {
    /// Fraction of clients misclustered (unassigned clients count as misclustered).
    pub clients: f64,
    /// Fraction of samples misclustered (clients weighted by `n_i`).
    pub samples: f64,
    /// `cluster_label[c]`: the true cluster holding a strict majority (> 1/2) of the clients of
    /// estimated cluster `c`, if any (`None` also for an empty cluster).
    pub cluster_label: Vec<Option<usize>>,
    /// Number of distinct true clusters that are the label of some estimated cluster (SRFCA's
    /// "proxies"; `k` when every true cluster is represented).
    pub proxies: usize,
    /// Clients outside every cluster.
    pub unassigned: usize,
}

/// SRFCA Definition 3.1: estimated cluster `c` has cluster label `j` when more than half of its
/// clients come from true cluster `j`; client `i` is correctly clustered when its cluster has a
/// label and the label is `z_i`. Several estimated clusters may share a label (a true cluster
/// split in two is not penalised: "proxies"); a cluster without a strict majority has no label,
/// so all its clients count as misclustered, and so do unassigned clients (`None`).
/// `k_hat` is the number of estimated clusters (labels must be `< k_hat`).
///
/// Decision: the majority is by client count, as in Definition 3.1 ("majority of users"), also
/// for the sample-weighted rate.
///
/// # Errors
/// Length mismatches; an estimated label `≥ k_hat` ([`FedmixError::LabelOutOfRange`]).
pub fn majority_misclustering(
    est: &[Option<usize>],
    truth: &[usize],
    sizes: &[usize],
    k_hat: usize,
) -> Result<MajorityMisclustering> {
    for (what, len) in [("true labels", truth.len()), ("client sizes", sizes.len())] {
        if len != est.len() {
            return Err(FedmixError::DimensionMismatch {
                what: format!("{what} vs estimated labels"),
                expected: est.len(),
                found: len,
            });
        }
    }
    check_label_range(truth, "true labels")?;
    if let Some(client) = est.iter().position(|l| l.is_some_and(|l| l >= k_hat)) {
        return Err(FedmixError::LabelOutOfRange {
            client,
            label: est[client].unwrap_or(0),
            k: k_hat,
        });
    }
    let k = truth.iter().max().map_or(1, |m| m + 1);
    let mut counts = vec![vec![0usize; k]; k_hat];
    for (e, &z) in est.iter().zip(truth) {
        if let Some(c) = *e {
            counts[c][z] += 1;
        }
    }
    let cluster_label: Vec<Option<usize>> = counts
        .iter()
        .map(|row| {
            let size: usize = row.iter().sum();
            row.iter().position(|&n| 2 * n > size)
        })
        .collect();
    let correct = |i: usize| est[i].is_some_and(|c| cluster_label[c] == Some(truth[i]));
    let (mut wrong_c, mut wrong_s, mut total_s) = (0usize, 0usize, 0usize);
    for (i, &n) in sizes.iter().enumerate() {
        total_s += n;
        if !correct(i) {
            wrong_c += 1;
            wrong_s += n;
        }
    }
    let mut proxies: Vec<usize> = cluster_label.iter().flatten().copied().collect();
    proxies.sort_unstable();
    proxies.dedup();
    let ratio = |a: usize, b: usize| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    Ok(MajorityMisclustering {
        clients: ratio(wrong_c, est.len()),
        samples: ratio(wrong_s, total_s),
        cluster_label,
        proxies: proxies.len(),
        unassigned: est.iter().filter(|e| e.is_none()).count(),
    })
}

/// How a misclustering rate was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MisclusteringMethod {
    /// Best label permutation ([`misclustering`]): `K̂ = k`, every client assigned.
    BestPermutation,
    /// SRFCA Definition 3.1 majority labels ([`majority_misclustering`]).
    Majority,
}

/// Misclustering rates of a clustering with `k_hat` estimated clusters against `k` true ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabelQuality {
    /// Fraction of clients misclustered.
    pub clients: f64,
    /// Fraction of samples misclustered.
    pub samples: f64,
    /// Which rule was used.
    pub method: MisclusteringMethod,
    /// Clients outside every cluster (counted as misclustered).
    pub unassigned: usize,
}

/// Decision (no paper fixes a misclustering rate for a mix of algorithms): the best-permutation
/// rate when `k_hat = k` and every client is assigned, because cluster indices are only
/// identifiable up to a permutation (as in SXY22 eq. 6); otherwise SR-FCA Definition 3.1
/// majority labels, because with `K̂ ≠ k` a permutation cannot match every cluster and would
/// count a correctly split true cluster as wrong.
///
/// # Errors
/// As [`misclustering`] / [`majority_misclustering`].
pub fn label_quality(
    est: &[Option<usize>],
    truth: &[usize],
    sizes: &[usize],
    k_hat: usize,
    k: usize,
) -> Result<LabelQuality> {
    let complete: Option<Vec<usize>> = est.iter().copied().collect();
    match complete {
        Some(est) if k_hat == k => {
            let m = misclustering(&est, truth, sizes)?;
            Ok(LabelQuality {
                clients: m.clients,
                samples: m.samples,
                method: MisclusteringMethod::BestPermutation,
                unassigned: 0,
            })
        }
        _ => {
            let m = majority_misclustering(est, truth, sizes, k_hat)?;
            Ok(LabelQuality {
                clients: m.clients,
                samples: m.samples,
                method: MisclusteringMethod::Majority,
                unassigned: m.unassigned,
            })
        }
    }
}

/// Label map maximising matched weight of a confusion matrix (rows: estimates, cols: truth).
fn best_label_map(conf: &DMatrix<f64>) -> Vec<Option<usize>> {
    let (r, c) = (conf.nrows(), conf.ncols());
    let mut map = vec![None; r];
    if r <= c {
        for (l, t) in hungarian(&(-conf)).into_iter().enumerate() {
            map[l] = Some(t);
        }
    } else {
        for (t, l) in hungarian(&(-conf.transpose())).into_iter().enumerate() {
            map[l] = Some(t);
        }
    }
    map
}

/// Label of a client outside every cluster (SR-FCA's components smaller than `t`). Written as
/// `-1` in label files; counted as misclustered (SRFCA Def. 3.1).
pub const UNASSIGNED: usize = usize::MAX;

/// Labels with `UNASSIGNED` (`usize::MAX`) turned into `None`.
pub fn as_options(labels: &[usize]) -> Vec<Option<usize>> {
    labels
        .iter()
        .map(|&l| (l != UNASSIGNED).then_some(l))
        .collect()
}
