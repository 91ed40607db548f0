//! Checks of the data model the experiments run on (SXY22 §2 and App. C, IFCA §6.1): the
//! library generator's laws ([`generator_laws`]).

pub mod generator_laws;

use crate::framework::Check;

/// The checks of this family, in report order.
pub fn all() -> Vec<Check> {
    vec![("generator_laws", generator_laws::run)]
}
