//! Common imports: `use fedmix::prelude::*;`.

pub use crate::error::{FedmixError, Result};
pub use crate::federation::{Federation, FederationParts};
pub use crate::metrics::{bottleneck_distance, misclustering, Assignment};
pub use crate::seed_streams::{stream, Purpose, Rng};
pub use crate::synthetic::{generate, generate_named, SettingParams, SyntheticData};
pub use nalgebra::{DMatrix, DVector};
