//! Range checks of the baselines' keys of a `KeyTable`, as methods (data-independent; the checks that
//! need the federation run when each algorithm resolves its parameters, [`super::resolved`]).
//! Each error names the key.

use super::baselines::{check_participation, MAX_RESTARTS, MAX_ROUNDS};
use super::key_table::KeyTable;
use crate::error::{FedmixError, Result};

impl KeyTable {
    /// Check IFCA's fields of the run configuration (data-independent ranges).
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the field.
    pub(crate) fn check_ifca(&self) -> Result<()> {
        check_participation(self.participation, self.rounds, self.restarts)?;
        if self.ifca_official_inits == 0 || self.ifca_official_inits > MAX_RESTARTS {
            return Err(FedmixError::invalid(
                "ifca_official_inits",
                self.ifca_official_inits,
                format!("must be in 1..={}", MAX_RESTARTS),
            ));
        }
        if self.ifca_official_iterations >= MAX_ROUNDS {
            return Err(FedmixError::invalid(
                "ifca_official_iterations",
                self.ifca_official_iterations,
                format!("must be < {}", MAX_ROUNDS),
            ));
        }
        if let Some(lrs) = &self.ifca_official_lrs {
            if lrs.is_empty() || lrs.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(FedmixError::invalid(
                    "ifca_official_lrs",
                    format!("{lrs:?}"),
                    "must be a non-empty list of finite values > 0",
                ));
            }
        }
        if let Some(s) = self.ifca_official_sigma {
            if !(s.is_finite() && s >= 0.0) {
                return Err(FedmixError::invalid(
                    "ifca_official_sigma",
                    s,
                    "must be finite and ≥ 0",
                ));
            }
        }
        if !(self.ifca_official_offset.is_finite() && self.ifca_official_offset >= 0.0) {
            return Err(FedmixError::invalid(
                "ifca_official_offset",
                self.ifca_official_offset,
                "must be finite and ≥ 0",
            ));
        }
        Ok(())
    }

    /// Check SR-FCA's fields of the run configuration.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the field.
    pub(crate) fn check_srfca(&self) -> Result<()> {
        if let Some(l) = self.srfca_lambda {
            if !(l.is_finite() && l > 0.0) {
                return Err(FedmixError::invalid(
                    "srfca_lambda",
                    l,
                    "must be finite and > 0",
                ));
            }
        }
        let q = self.srfca_lambda_quantile;
        if !(q > 0.0 && q <= 1.0) {
            return Err(FedmixError::invalid(
                "srfca_lambda_quantile",
                q,
                "must be in (0, 1]",
            ));
        }
        if self.srfca_size == 0 {
            return Err(FedmixError::invalid("srfca_size", 0, "t must be ≥ 1"));
        }
        let b = self.srfca_beta;
        if !((0.0..0.5).contains(&b)) {
            return Err(FedmixError::invalid(
                "srfca_beta",
                b,
                "β must be in [0, 1/2)",
            ));
        }
        if self.srfca_refine_steps == 0 {
            return Err(FedmixError::invalid(
                "srfca_refine_steps",
                0,
                "R must be ≥ 1",
            ));
        }
        if self.srfca_refine_rounds == 0 {
            return Err(FedmixError::invalid(
                "srfca_refine_rounds",
                0,
                "T must be ≥ 1",
            ));
        }
        if self.srfca_local_iterations == Some(0) {
            return Err(FedmixError::invalid(
                "srfca_local_iterations",
                0,
                "must be ≥ 1 (unset = exact local least squares)",
            ));
        }
        if let Some(dm) = self.srfca_diameter {
            if !(dm.is_finite() && dm > 0.0) {
                return Err(FedmixError::invalid(
                    "srfca_diameter",
                    dm,
                    "D must be finite and > 0",
                ));
            }
        }
        Ok(())
    }

    /// Check CFL's fields of the run configuration.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] naming the field.
    pub(crate) fn check_cfl(&self) -> Result<()> {
        for (name, v) in [("cfl_eps1", self.cfl_eps1), ("cfl_eps2", self.cfl_eps2)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(FedmixError::invalid(name, v, "must be finite and > 0"));
            }
        }
        let g = self.cfl_gamma_max;
        if !((0.0..1.0).contains(&g)) {
            return Err(FedmixError::invalid(
                "cfl_gamma_max",
                g,
                "must be in [0, 1)",
            ));
        }
        Ok(())
    }

    /// Check the one-shot fields of the run configuration.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] for `kmeans_inits = 0`, `local_ridge < 0`.
    pub(crate) fn check_one_shot(&self) -> Result<()> {
        if self.kmeans_inits == 0 {
            return Err(FedmixError::invalid("kmeans_inits", 0, "must be ≥ 1"));
        }
        self.check_local()
    }

    /// Check the local baseline's field of the run configuration.
    ///
    /// # Errors
    /// [`FedmixError::InvalidParameter`] for `local_ridge` < 0 or non-finite.
    pub(crate) fn check_local(&self) -> Result<()> {
        if !(self.local_ridge.is_finite() && self.local_ridge >= 0.0) {
            return Err(FedmixError::invalid(
                "local_ridge",
                self.local_ridge,
                "must be finite and ≥ 0",
            ));
        }
        Ok(())
    }
}
