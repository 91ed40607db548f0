//! How a run key is declared: the `run_keys!` macro, which takes each key once — name, type,
//! default, the group of algorithms that read it, a valid example value, its range check and its
//! doc comment — and derives from that one list the key table ([`super::key_table::KeyTable`]:
//! parsing of `--set` / TOML / Python keyword values, defaults), [`super::KEYS`], the keys'
//! reference ([`KEY_SPECS`](super::key_table::KEY_SPECS), from which the CLI's `run --help`, the Python `help(fedmix.run)` and
//! `docs/keys.md` are written) and the per-key range checks. The range checks' helpers live here.

/// Which algorithms read a key: whole groups (SXY22's two phases), or algorithms named in
/// [`super::keys_of`]'s own lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyGroup {
    /// SXY22 Phase 2's step (§4.2): read by every algorithm with a Phase 2.
    Phase2,
    /// SXY22 Phase 1 (§4.1, App. C): read by `two-phase`.
    Phase1,
    /// Read by the algorithms whose own lists name it.
    Own,
}

/// One run key as declared.
#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    /// The key (`--set NAME=…`).
    pub name: &'static str,
    /// Its Rust type, as written in the declaration.
    pub ty: &'static str,
    /// Who reads it.
    pub group: KeyGroup,
    /// A valid value other than the default (what the tests set it to).
    pub example: &'static str,
    /// The doc comment, one string (lines joined by `\n`).
    pub doc: &'static str,
}

impl KeySpec {
    /// The doc comment's first paragraph on one line (what the help texts show).
    pub fn summary(&self) -> String {
        let para = self.doc.split("\n\n").next().unwrap_or_default();
        para.lines().map(str::trim).collect::<Vec<_>>().join(" ")
    }
}

/// A failed range check: the value as shown and the reason.
pub(crate) type Verdict = std::result::Result<(), (String, String)>;

/// No range check.
pub(crate) fn any<T>(_: &T) -> Verdict {
    Ok(())
}

/// `reason` unless `ok`.
pub(crate) fn rule(ok: bool, value: impl ToString, reason: impl Into<String>) -> Verdict {
    if ok {
        Ok(())
    } else {
        Err((value.to_string(), reason.into()))
    }
}

/// `v ≥ 1`.
pub(crate) fn at_least_one(v: &usize) -> Verdict {
    rule(*v >= 1, v, "must be ≥ 1")
}

/// `v` finite and `> 0`.
pub(crate) fn positive(v: f64) -> Verdict {
    rule(v.is_finite() && v > 0.0, v, "must be finite and > 0")
}

/// `v` finite and `≥ 0`.
pub(crate) fn non_negative(v: f64) -> Verdict {
    rule(v.is_finite() && v >= 0.0, v, "must be finite and ≥ 0")
}

/// Declares the run keys, each once (see the module doc). Each entry:
///
/// ```text
/// /// Doc comment (the key's reference).
/// name: Type = default_expression; Group, "example value", |v| range_check(v);
/// ```
///
/// The range check is a closure `&Type → Verdict` (`Err((value shown, reason))`); the error
/// names the key.
macro_rules! run_keys {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident : $ty:ty = $default:expr ; $group:ident , $example:literal , $check:expr ;
    )*) => {
        /// Every key of every algorithm with its default: the syntax of `--set` / TOML and the
        /// keys' reference. Parse keys with [`crate::algorithms::AlgorithmParams::from_sources`].
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct KeyTable {
            $($(#[doc = $doc])* pub $name: $ty,)*
        }

        impl Default for KeyTable {
            fn default() -> Self {
                Self { $($name: $default,)* }
            }
        }

        /// Every run key, in declaration order.
        pub const KEYS: &[&str] = &[$(stringify!($name),)*];

        /// Every run key as declared, in declaration order.
        pub const KEY_SPECS: &[$crate::params::key_decl::KeySpec] = &[$(
            $crate::params::key_decl::KeySpec {
                name: stringify!($name),
                ty: stringify!($ty),
                group: $crate::params::key_decl::KeyGroup::$group,
                example: $example,
                doc: concat!($($doc, "\n",)*),
            },
        )*];

        /// One range check per key, each error naming its key.
        pub(crate) mod check_key {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[doc = concat!("The range check of `", stringify!($name), "`.")]
                pub(crate) fn $name(v: &$ty) -> $crate::error::Result<()> {
                    let check: fn(&$ty) -> $crate::params::key_decl::Verdict = $check;
                    check(v).map_err(|(value, reason)| {
                        $crate::error::FedmixError::invalid(stringify!($name), value, reason)
                    })
                }
            )*
        }

        impl KeyTable {
            /// Range checks independent of the data, key by key in declaration order.
            ///
            /// # Errors
            /// [`FedmixError::InvalidParameter`] naming the first key out of range.
            pub(crate) fn check(&self) -> Result<()> {
                $(check_key::$name(&self.$name)?;)*
                Ok(())
            }
        }
    };
}
pub(crate) use run_keys;
