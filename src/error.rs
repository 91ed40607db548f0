//! Typed errors for every failure a user can cause.
//!
//! One variant per failure, each carrying the data a user needs to locate the problem
//! (client index, field name, file path, round), in the style of faer's
//! `NonPositivePivot { index }`. The CLI prints the `Display` form on one line and exits with
//! status 2.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = FedmixError> = std::result::Result<T, E>;

/// Every error fedmix can return.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FedmixError {
    /// A federation must have at least one client.
    #[error("the federation has no clients")]
    NoClients,
    /// A client holds no samples (`n_i = 0`).
    #[error("client {client} has no samples (n_i = 0)")]
    EmptyClient {
        /// Index of the client.
        client: usize,
    },
    /// A value that must be finite is NaN or infinite.
    #[error("{field} contains a non-finite value ({value}) at {location}")]
    NonFinite {
        /// Which array or parameter.
        field: String,
        /// Where: client/sample/coordinate description.
        location: String,
        /// The offending value.
        value: f64,
    },
    /// Two sizes that must agree do not.
    #[error("dimension mismatch in {what}: expected {expected}, found {found}")]
    DimensionMismatch {
        /// What was compared.
        what: String,
        /// Expected size.
        expected: usize,
        /// Size found.
        found: usize,
    },
    /// A true label is outside `0..k`.
    #[error("client {client} has label {label}, but k = {k}")]
    LabelOutOfRange {
        /// Index of the client.
        client: usize,
        /// The label found.
        label: usize,
        /// Number of clusters.
        k: usize,
    },
    /// A candidate label (`fedmix validate --labels`) given as a float that is not an integer
    /// (NaN, ±inf, a fraction, or beyond the int64 range): refused rather than cast.
    #[error(
        "{}: label of client {client} in round {round} is {value}, not an integer (labels are \
         cluster indices, -1 for unassigned)", path.display()
    )]
    LabelNotInteger {
        /// The file or array.
        path: PathBuf,
        /// Round (1-based).
        round: usize,
        /// Client (0-based).
        client: usize,
        /// The value found.
        value: f64,
    },
    /// A candidate label that is neither `-1` (unassigned) nor a model slot of its round (the
    /// reference's models or the candidate's model axis, whichever is larger).
    #[error(
        "candidate labels: client {client} in round {round} has label {label}, but the reference \
         has {models} model(s) in that round and the candidate's iterates {slots} model slot(s) \
         (valid: 0..{}, or -1 for unassigned)", (*.models).max(*.slots)
    )]
    CandidateLabelOutOfRange {
        /// Round (1-based).
        round: usize,
        /// Client (0-based).
        client: usize,
        /// The label found.
        label: i64,
        /// Models of the reference in that round.
        models: usize,
        /// Model slots of the candidate's iterates (its model axis).
        slots: usize,
    },
    /// A parameter value is outside its valid range.
    #[error("parameter `{name}` = {value} is invalid: {reason}")]
    InvalidParameter {
        /// Parameter name (the public `--set` / TOML name).
        name: String,
        /// The value given.
        value: String,
        /// Why it is rejected and what range is valid.
        reason: String,
    },
    /// A `--set key=value` pair that is not of that form.
    #[error("malformed override `{given}`: expected key=value")]
    MalformedOverride {
        /// The text given.
        given: String,
    },
    /// Unknown synthetic setting name.
    #[error("unknown setting `{name}`; known settings: {known}")]
    UnknownSetting {
        /// The name given.
        name: String,
        /// Comma-separated list of valid names.
        known: String,
    },
    /// A candidate trajectory with another number of rounds than the reference run.
    #[error(
        "the candidate has {candidate} rounds but the reference ran {reference}: pass \
         `--set rounds={candidate}` (or save {reference} rounds)"
    )]
    RoundsMismatch {
        /// Rounds in the candidate file.
        candidate: usize,
        /// Rounds of the reference run.
        reference: usize,
    },
    /// Unknown run-configuration key (`--set`, `--config`, experiment files), with the nearest
    /// key or the place the key belongs.
    #[error("unknown key `{name}` in {origin}: {hint}")]
    UnknownKey {
        /// The key given.
        name: String,
        /// Where it was given (`--set`, a file).
        origin: String,
        /// What to do instead.
        hint: String,
    },
    /// Unknown parameter name for a setting or algorithm.
    #[error("unknown parameter `{name}` for {owner}; known parameters: {known}")]
    UnknownParameter {
        /// The name given.
        name: String,
        /// The setting or algorithm it was given to.
        owner: String,
        /// Comma-separated list of valid names.
        known: String,
    },
    /// The local step is too large for the data: `γ = η max_i ‖φ_i‖²/n_i ≥ 1`.
    #[error(
        "step size eta = {eta} gives gamma = {gamma:.6} >= 1 (divergent local steps); \
         the largest admissible eta is {eta_max:.6e} (client {client} has the largest ‖φ_i‖²/n_i)"
    )]
    StepTooLarge {
        /// The step size given.
        eta: f64,
        /// The resulting γ.
        gamma: f64,
        /// `1 / max_i ‖φ_i‖²/n_i`.
        eta_max: f64,
        /// The client attaining the max.
        client: usize,
    },
    /// A client has fewer samples than a phase needs.
    #[error("client {client} has {n} samples but {needed} are needed for {purpose}")]
    NotEnoughSamples {
        /// Index of the client.
        client: usize,
        /// Samples it has.
        n: usize,
        /// Samples needed.
        needed: usize,
        /// What needs them.
        purpose: String,
    },
    /// Too few clients qualify for some role.
    #[error("{purpose}: {found} eligible clients, {needed} needed")]
    NotEnoughClients {
        /// What needs them.
        purpose: String,
        /// How many qualify.
        found: usize,
        /// How many are needed.
        needed: usize,
    },
    /// Phase 1 anchor clustering found fewer than k components.
    #[error("Phase 1 found {found} clusters among the anchors, but k = {k}")]
    TooFewClusters {
        /// Components found.
        found: usize,
        /// Clusters wanted.
        k: usize,
    },
    /// A clustering step left no cluster at all (SR-FCA: every component smaller than `t`).
    #[error("{algorithm}: no cluster formed at {stage}: {detail}")]
    NoClustersFormed {
        /// Algorithm name.
        algorithm: String,
        /// Stage (e.g. `ONE_SHOT`, `MERGE of REFINE step 2`).
        stage: String,
        /// What to change (threshold, size parameter…).
        detail: String,
    },
    /// `fedmix validate --one-step` for an algorithm whose round is not a function of the
    /// models broadcast at its start (or whose one step is not implemented).
    #[error("--one-step is not available for `{algorithm}`: {reason}; validate it by trajectory (without --one-step)")]
    OneStepUnsupported {
        /// Algorithm name.
        algorithm: String,
        /// Why one round from a given state is not defined for it.
        reason: String,
    },
    /// An iterate became non-finite.
    #[error("{phase}: iterate became non-finite at round {round} (divergence)")]
    Divergence {
        /// Phase or algorithm name.
        phase: String,
        /// Round at which it happened.
        round: usize,
    },
    /// An iterative solver stopped at its iteration cap without meeting its tolerance.
    #[error("{what} did not converge after {iterations} iterations (residual {residual:.3e} > tolerance {tolerance:e})")]
    NotConverged {
        /// Which solver.
        what: String,
        /// Iterations (operator applications) taken.
        iterations: usize,
        /// Its convergence measure at the cap.
        residual: f64,
        /// The tolerance it had to meet.
        tolerance: f64,
    },
    /// A matrix that must be positive definite is not.
    #[error("{what} is not positive definite")]
    NotPositiveDefinite {
        /// What matrix.
        what: String,
    },
    /// Data the operation requires is missing (e.g. true labels for ρ).
    #[error("{what} is required but the data set has none")]
    Missing {
        /// What is missing.
        what: String,
    },
    /// A file the format requires does not exist.
    #[error("missing file {path}")]
    MissingFile {
        /// The path.
        path: PathBuf,
    },
    /// An `.npy` array has the wrong element type.
    #[error("{path}: dtype {found}, expected {expected}")]
    WrongDtype {
        /// The file.
        path: PathBuf,
        /// Expected numpy dtype descriptor.
        expected: String,
        /// Descriptor found.
        found: String,
    },
    /// An `.npy` array has a shape that disagrees with the manifest.
    #[error("{}: shape {found:?}, expected {}", path.display(), shape_text(expected))]
    ShapeMismatch {
        /// The file.
        path: PathBuf,
        /// Shape implied by the manifest (`None`: any extent).
        expected: Vec<Option<usize>>,
        /// Shape found.
        found: Vec<usize>,
    },
    /// A file is not in the expected format (truncated, bad header, bad JSON/TOML…).
    #[error("{path}: malformed: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A manifest written by a newer fedmix.
    #[error("{path}: format version {found} is newer than this fedmix supports ({supported})")]
    UnsupportedVersion {
        /// The manifest.
        path: PathBuf,
        /// Version found.
        found: u32,
        /// Newest version supported.
        supported: u32,
    },
    /// A request whose memory would exceed a sane limit, refused before allocating.
    #[error("{what} would need {bytes} bytes, more than the limit of {limit} bytes")]
    TooLarge {
        /// What would be allocated.
        what: String,
        /// Bytes needed.
        bytes: u128,
        /// The limit.
        limit: u128,
    },
    /// An output location that cannot be used.
    #[error("output {path}: {message}")]
    Output {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A randomness file (`--anchors`, `--q0`, `--power-start`, `--participation`, `--init`)
    /// whose content is invalid or disagrees with the run; `field` names the entry.
    #[error("{}: `{field}`: {reason}", path.display())]
    InvalidRandomness {
        /// The file.
        path: PathBuf,
        /// The field or entry (e.g. `anchors[3]`, `client_sets[1]`, `q0: axis 2 (d)`).
        field: String,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// A client id in a randomness file outside `0..M`.
    #[error("{}: `{field}`: client id {id} is out of range (M = {clients} clients, ids 0..{clients})", path.display())]
    ClientIdOutOfRange {
        /// The file.
        path: PathBuf,
        /// The field (e.g. `anchors[2]`).
        field: String,
        /// The id given.
        id: i128,
        /// Number of clients M.
        clients: usize,
    },
    /// A participation schedule with a round nobody takes part in.
    #[error("{}: `participation[{restart}][{round}]`: round {round} of restart {restart} has no participant (each round needs at least one 1)", path.display())]
    EmptyRound {
        /// The file.
        path: PathBuf,
        /// Restart index (0-based).
        restart: usize,
        /// Round index (0-based).
        round: usize,
    },
    /// An operating-system I/O error.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// `[3, any]` for an expected shape.
fn shape_text(expected: &[Option<usize>]) -> String {
    let parts: Vec<String> = expected
        .iter()
        .map(|e| e.map_or("any".into(), |n| n.to_string()))
        .collect();
    format!("[{}]", parts.join(", "))
}

impl FedmixError {
    /// Shorthand for [`FedmixError::InvalidParameter`].
    pub fn invalid(name: &str, value: impl ToString, reason: impl Into<String>) -> Self {
        Self::InvalidParameter {
            name: name.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`FedmixError::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
