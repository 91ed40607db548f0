//! Minimal typed `.npy` reading and writing over [`npyz`]: float64 (`<f8`) and int64 (`<i8`)
//! arrays in C order, validated against an expected shape before any large allocation.

use crate::error::{FedmixError, Result};
use npyz::WriterBuilder;
use std::path::Path;

fn encode<T: npyz::Serialize + npyz::AutoSerialize + Copy>(
    shape: &[usize],
    data: &[T],
) -> Result<Vec<u8>> {
    let shape: Vec<u64> = shape.iter().map(|&s| s as u64).collect();
    let mut buf = Vec::with_capacity(data.len() * 8 + 128);
    let io_err = |e: std::io::Error| FedmixError::io("<npy buffer>", e);
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(&mut buf)
        .begin_nd()
        .map_err(io_err)?;
    w.extend(data.iter().copied()).map_err(io_err)?;
    w.finish().map_err(io_err)?;
    Ok(buf)
}

/// Write a float64 array of `shape` (C order) atomically.
///
/// # Errors
/// [`FedmixError::Io`].
pub fn write_f64(path: &Path, shape: &[usize], data: &[f64]) -> Result<()> {
    debug_assert_eq!(shape.iter().product::<usize>(), data.len());
    super::write_atomic(path, &encode(shape, data)?)
}

/// Write an int64 array of `shape` (C order) atomically.
///
/// # Errors
/// [`FedmixError::Io`].
pub fn write_i64(path: &Path, shape: &[usize], data: &[i64]) -> Result<()> {
    debug_assert_eq!(shape.iter().product::<usize>(), data.len());
    super::write_atomic(path, &encode(shape, data)?)
}

/// Parse the header, check dtype, order and shape (`None` in `expected` = any extent), and
/// that the payload is complete. Returns the file bytes and the shape found.
fn open(path: &Path, descr: &str, expected: &[Option<usize>]) -> Result<(Vec<u8>, Vec<usize>)> {
    if !path.exists() {
        return Err(FedmixError::MissingFile { path: path.into() });
    }
    let bytes = std::fs::read(path).map_err(|e| FedmixError::io(path, e))?;
    let shape = check_bytes(path, &bytes, bytes.len(), descr, expected)?;
    Ok((bytes, shape))
}

/// Validate `.npy` bytes (see [`open`]): `bytes` holds at least the header, `total_len` is the
/// length of the whole file (so the payload is checked for completeness without being read);
/// `path` only names the source in errors.
fn check_bytes(
    path: &Path,
    bytes: &[u8],
    total_len: usize,
    descr: &str,
    expected: &[Option<usize>],
) -> Result<Vec<usize>> {
    let malformed = |message: String| FedmixError::Malformed {
        path: path.into(),
        message,
    };
    check_header_text(bytes).map_err(|m| malformed(m.into()))?;
    let npy =
        npyz::NpyFile::new(bytes).map_err(|e| malformed(format!("not a valid .npy file: {e}")))?;
    // `DType::descr` is the Python literal (`'<f8'`, quoted); compare the bare type string.
    let found_descr = match npy.dtype() {
        npyz::DType::Plain(ty) => ty.to_string(),
        other => other.descr(),
    };
    if found_descr != descr {
        return Err(FedmixError::WrongDtype {
            path: path.into(),
            expected: descr.into(),
            found: found_descr,
        });
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&s| s as usize).collect();
    let shape_ok = shape.len() == expected.len()
        && shape
            .iter()
            .zip(expected)
            .all(|(s, e)| e.is_none_or(|e| e == *s));
    if !shape_ok {
        return Err(FedmixError::ShapeMismatch {
            path: path.into(),
            expected: expected.to_vec(),
            found: shape,
        });
    }
    if shape.len() > 1 && npy.order() != npyz::Order::C {
        return Err(malformed(
            "Fortran order is not supported; save with C order".into(),
        ));
    }
    let elems = shape
        .iter()
        .try_fold(1u128, |acc, &s| acc.checked_mul(s as u128));
    let payload = data_offset(bytes).map(|off| total_len.saturating_sub(off) as u128);
    match (elems, payload) {
        (Some(e), Some(p)) if e * 8 == p => {}
        (Some(e), Some(p)) if e * 8 < p => {
            return Err(malformed(format!(
                "{} trailing bytes after the {e} elements of shape {shape:?}",
                p - e * 8
            )))
        }
        _ => {
            return Err(malformed(format!(
                "truncated: shape {shape:?} needs more bytes than the file has"
            )))
        }
    }
    Ok(shape)
}

/// Offset of the data in an `.npy` file: magic (6) + version (2) + header length (2 bytes in
/// format 1.0, 4 in 2.0/3.0) + header.
fn data_offset(bytes: &[u8]) -> Option<usize> {
    match bytes.get(6)? {
        1 => Some(10 + u16::from_le_bytes([*bytes.get(8)?, *bytes.get(9)?]) as usize),
        2 | 3 => {
            let b = bytes.get(8..12)?;
            Some(12 + u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        }
        _ => None,
    }
}

/// Reject, before the header parser sees it, a header this reader never accepts: bad magic, a
/// header longer than the file, or nested brackets (structured dtypes). Found by fuzzing: the
/// Python-literal parser of npyz takes exponential time on a run of `[` (43 bytes → > 6 s).
fn check_header_text(bytes: &[u8]) -> std::result::Result<(), &'static str> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a valid .npy file (magic string missing)");
    }
    let start = if bytes[6] == 1 { 10 } else { 12 };
    let end = data_offset(bytes).ok_or("not a valid .npy file (unknown format version)")?;
    let header = bytes.get(start..end).ok_or("truncated header")?;
    let opens = |c: u8| header.iter().filter(|&&b| b == c).count();
    if opens(b'[') > 0 || opens(b'(') > 1 || opens(b'{') > 1 {
        return Err("header has nested structures (only plain float64/int64 arrays are read)");
    }
    Ok(())
}

/// Decode float64 `.npy` bytes with the same checks as [`read_f64`] (used by the fuzz targets
/// and by callers that hold the bytes already); `source` names them in errors.
///
/// # Errors
/// As [`read_f64`], except [`FedmixError::MissingFile`].
pub fn decode_f64(
    source: &Path,
    bytes: &[u8],
    expected: &[Option<usize>],
) -> Result<(Vec<usize>, Vec<f64>)> {
    let shape = check_bytes(source, bytes, bytes.len(), "<f8", expected)?;
    let npy = npyz::NpyFile::new(bytes).map_err(|e| FedmixError::io(source, e))?;
    let data = npy.into_vec::<f64>().map_err(|e| FedmixError::Malformed {
        path: source.into(),
        message: e.to_string(),
    })?;
    Ok((shape, data))
}

/// Read a float64 array, checking dtype `<f8`, shape and completeness. Returns shape and data.
///
/// The file is streamed: its header is read and checked first, then the payload is decoded in
/// blocks of [`READ_BLOCK`] bytes straight into the result, so the peak memory is the array
/// itself (not the file's bytes and the array, twice the data).
///
/// # Errors
/// [`FedmixError::MissingFile`], [`FedmixError::WrongDtype`], [`FedmixError::ShapeMismatch`],
/// [`FedmixError::Malformed`].
pub fn read_f64(path: &Path, expected: &[Option<usize>]) -> Result<(Vec<usize>, Vec<f64>)> {
    use std::io::Read;
    if !path.exists() {
        return Err(FedmixError::MissingFile { path: path.into() });
    }
    let io = |e: std::io::Error| FedmixError::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let total = usize::try_from(file.metadata().map_err(io)?.len()).unwrap_or(usize::MAX);
    // Magic, version and header length (12 bytes covers formats 1.0 and 2.0/3.0), then the
    // header itself; a file too short for either is left to the in-memory checks.
    let mut head = vec![0u8; 12];
    let offset = match file.read_exact(&mut head) {
        Ok(()) => data_offset(&head).filter(|&off| off >= 12 && off <= total),
        Err(_) => None,
    };
    let Some(offset) = offset else {
        let (bytes, _) = open(path, "<f8", expected)?;
        return decode_f64(path, &bytes, expected);
    };
    head.resize(offset, 0);
    file.read_exact(&mut head[12..]).map_err(io)?;
    let shape = check_bytes(path, &head, total, "<f8", expected)?;
    let mut left = shape.iter().product::<usize>() * 8;
    let mut data = Vec::with_capacity(left / 8);
    let mut block = vec![0u8; READ_BLOCK.min(left)];
    while left > 0 {
        let n = left.min(READ_BLOCK);
        file.read_exact(&mut block[..n]).map_err(io)?;
        data.extend(
            block[..n]
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
        );
        left -= n;
    }
    Ok((shape, data))
}

/// Bytes decoded at a time by [`read_f64`] (64 KiB, a multiple of 8).
pub const READ_BLOCK: usize = 1 << 16;

/// Read an int64 array; see [`read_f64`].
///
/// # Errors
/// As [`read_f64`].
pub fn read_i64(path: &Path, expected: &[Option<usize>]) -> Result<(Vec<usize>, Vec<i64>)> {
    let (bytes, shape) = open(path, "<i8", expected)?;
    let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| FedmixError::io(path, e))?;
    let data = npy.into_vec::<i64>().map_err(|e| FedmixError::Malformed {
        path: path.into(),
        message: e.to_string(),
    })?;
    Ok((shape, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("fedmix-npy-{}-{name}", std::process::id()))
    }

    #[test]
    fn streamed_reads_equal_the_in_memory_decoder_and_refuse_short_files() {
        // More than one read block, and a length that is not a multiple of it.
        let (rows, cols) = (3001, 7);
        let data: Vec<f64> = (0..rows * cols).map(|i| (i as f64).sin() * 1e3).collect();
        let path = scratch("stream.npy");
        write_f64(&path, &[rows, cols], &data).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let (shape, read) = read_f64(&path, &[Some(rows), None]).unwrap();
        assert_eq!(
            (shape.clone(), read.clone()),
            decode_f64(&path, &bytes, &[None, None]).unwrap()
        );
        assert_eq!((shape, read), (vec![rows, cols], data));
        // A truncated payload and a trailing byte are refused before any decoding.
        for (name, body) in [
            ("short.npy", &bytes[..bytes.len() - 8]),
            ("long.npy", &[&bytes[..], &[0u8]].concat()[..]),
        ] {
            let p = scratch(name);
            std::fs::write(&p, body).unwrap();
            let err = read_f64(&p, &[None, None]).unwrap_err().to_string();
            assert!(
                err.contains("truncated") || err.contains("trailing"),
                "{err}"
            );
            let _ = std::fs::remove_file(p);
        }
        // A file shorter than any header goes through the in-memory checks.
        let tiny = scratch("tiny.npy");
        std::fs::write(&tiny, b"\x93NUMPY").unwrap();
        assert!(read_f64(&tiny, &[None]).is_err());
        let _ = std::fs::remove_file(tiny);
        let _ = std::fs::remove_file(path);
    }
}
