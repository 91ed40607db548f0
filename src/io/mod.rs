//! File formats readable without fedmix: JSON manifests and `.npy` arrays (float64 / int64,
//! C order), every file written atomically (temporary file in the same directory + rename).

pub mod dataset;
pub mod npy;

pub use dataset::{
    parse_manifest, read_dataset, read_manifest, write_dataset, Dataset, Manifest, FORMAT_VERSION,
};
pub use npy::{decode_f64, read_f64, read_i64, write_f64, write_i64};

use crate::error::{FedmixError, Result};
use std::io::Write;
use std::path::Path;

/// Write `bytes` to `path` atomically: a temporary file in the same directory, flushed and
/// synced, then renamed over `path`. A reader never sees a partial file.
///
/// # Errors
/// [`FedmixError::Io`] naming the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(FedmixError::io(path, e));
    }
    Ok(())
}

/// Serialize `value` as pretty JSON and write it atomically.
///
/// # Errors
/// [`FedmixError::Io`].
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| FedmixError::Malformed {
        path: path.into(),
        message: e.to_string(),
    })?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Create `dir` (and parents) for output, failing clearly when it is a file or not writable.
///
/// # Errors
/// [`FedmixError::Output`].
pub fn prepare_output_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(FedmixError::Output {
            path: dir.into(),
            message: "exists and is not a directory".into(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|e| FedmixError::Output {
        path: dir.into(),
        message: e.to_string(),
    })
}
