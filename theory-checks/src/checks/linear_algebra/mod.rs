//! Checks of the linear_algebra group (see the module list below). Each module: `pub fn run(cfg: &CheckConfig) -> CheckRecord`.

use crate::Check;

/// The checks of this group, in report order.
pub fn all() -> Vec<Check> {
    vec![]
}
