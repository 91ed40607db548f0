//! Checked parameters (linfa's `ParamGuard` → valid parameters): a parameter group is written
//! as a plain struct with public fields, and becomes a [`Valid`] only through
//! [`ParamGuard::check`]; what builds an algorithm ([`crate::algorithms::AlgorithmParams`], the algorithms'
//! `params` fields) holds a `Valid`, so no public path runs an algorithm on unchecked values.

use crate::error::Result;
use serde::Serialize;

/// Parameters that passed their checks. The fields are read through `Deref`; to change one,
/// take the parameters out ([`Valid::into_inner`]), change them and check them again.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Valid<P>(P);

impl<P> std::ops::Deref for Valid<P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.0
    }
}

impl<P> Valid<P> {
    /// The checked parameters, unchecked again (to edit them and [`ParamGuard::check`] anew).
    pub fn into_inner(self) -> P {
        self.0
    }
}

/// A parameter group with data-independent checks (linfa's `ParamGuard`).
pub trait ParamGuard: Sized {
    /// Check every value of the group.
    ///
    /// # Errors
    /// [`crate::error::FedmixError::InvalidParameter`] naming the first key out of range.
    fn check_ref(&self) -> Result<()>;

    /// The group, checked.
    ///
    /// # Errors
    /// As [`ParamGuard::check_ref`].
    fn check(self) -> Result<Valid<Self>> {
        self.check_ref()?;
        Ok(Valid(self))
    }
}

/// Declares parameters resolved against the data (an algorithm's values once `k`, the step or
/// σ are known), each field written once: the struct, with fields visible to the crate only,
/// and a public read-only accessor per field carrying the field's doc (a copy of the value).
/// Outside the crate such parameters come only from their `resolve` constructor, which takes a
/// [`Valid`] group: no public path builds them unchecked or edits one after its checks.
macro_rules! resolved_params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[doc = $doc:literal])* $f:ident : $ty:ty),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[doc = $doc])* pub(crate) $f: $ty,)*
        }

        #[allow(clippy::clone_on_copy)]
        impl $name {
            $(
                $(#[doc = $doc])*
                pub fn $f(&self) -> $ty {
                    self.$f.clone()
                }
            )*
        }
    };
}
pub(crate) use resolved_params;
