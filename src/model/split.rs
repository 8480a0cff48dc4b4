//! Models split over several GGUF files (gguf-split): the file names
//! (`<prefix>-00001-of-00003.gguf`), and opening a split set as the
//! reference's llama_model_loader does. The first file carries the metadata
//! and `split.count`; every file carries `split.no` (u16, its 0-based index);
//! the first carries `split.tensors.count` (i32, the tensors of all files).

use crate::error::{Error, Result};
use crate::gguf::{GgufFile, Value};
use std::path::{Path, PathBuf};

pub const KEY_SPLIT_NO: &str = "split.no";
pub const KEY_SPLIT_COUNT: &str = "split.count";
pub const KEY_SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// PATH_MAX: the reference's buffer for split file names.
const PATH_MAX: usize = 4096;

/// `"<prefix>-%05d-of-%05d.gguf"` with `split_no + 1` (llama_split_path).
pub fn split_path(prefix: &[u8], split_no: i32, split_count: i32) -> Vec<u8> {
    let mut path = prefix.to_vec();
    path.extend_from_slice(format!("-{:05}-of-{:05}.gguf", split_no.wrapping_add(1), split_count).as_bytes());
    path
}

/// The prefix of `path` if it ends with the postfix `split_path` gives for
/// these numbers (llama_split_prefix), else `None`.
pub fn split_prefix(path: &[u8], split_no: i32, split_count: i32) -> Option<&[u8]> {
    let mut postfix = format!("-{:05}-of-{:05}.gguf", split_no.wrapping_add(1), split_count).into_bytes();
    postfix.truncate(31); // the reference formats it into a char[32]
    if path.len() <= postfix.len() || !path.ends_with(&postfix) {
        return None;
    }
    Some(&path[..path.len() - postfix.len()])
}

fn path_bytes(p: &Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes()
}

fn path_from(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

/// A u16 key, typed as the reference reads it (`get_key<uint16_t>`).
fn get_u16(f: &GgufFile, key: &str) -> Result<Option<u16>> {
    match f.get(key) {
        None => Ok(None),
        Some(Value::U16(v)) => Ok(Some(v)),
        Some(v) => Err(Error::model(format!("key {key} has wrong type {} but expected type u16", v.type_name()))),
    }
}

/// The number of parts a model file says it has (1 when not split).
pub fn split_count(first: &GgufFile) -> Result<u16> {
    Ok(get_u16(first, KEY_SPLIT_COUNT)?.unwrap_or(0).max(1))
}

/// The paths of all parts of a split model, from the name of its first part
/// (llama_get_list_splits).
pub fn list_splits(first: &Path, n_split: u16) -> Result<Vec<PathBuf>> {
    let n = i32::from(n_split);
    let prefix =
        split_prefix(path_bytes(first), 0, n).filter(|p| !p.is_empty() && p.len() < PATH_MAX).ok_or_else(|| {
            Error::model(format!(
                "invalid split file name: {} (the first of {n} splits must end in -00001-of-{n:05}.gguf)",
                first.display()
            ))
        })?;
    Ok((0..n).map(|i| path_from(&split_path(prefix, i, n))).collect())
}

/// Opens a model: `first`, and when it says it is split, the other parts —
/// `given` (all parts, `given[0]` being `first`) or, if `given` is empty,
/// the names derived from `first`'s. Checks each part's `split.no` and the
/// total tensor count, with the reference's messages.
pub fn open_parts(first: &Path, given: &[PathBuf]) -> Result<Vec<GgufFile>> {
    let main = GgufFile::open(first)?;
    let n_split = split_count(&main)?;
    if n_split <= 1 {
        if given.len() > 1 {
            // The reference ignores the other paths of an unsplit model.
            crate::log_warn!(
                "{} is not a split model (no {KEY_SPLIT_COUNT} > 1): the other {} path(s) are ignored",
                first.display(),
                given.len() - 1
            );
        }
        return Ok(vec![main]);
    }
    let idx =
        get_u16(&main, KEY_SPLIT_NO)?.ok_or_else(|| Error::model(format!("key not found in model: {KEY_SPLIT_NO}")))?;
    if idx != 0 {
        return Err(Error::model(format!(
            "illegal split file idx: {idx} (file: {}), model must be loaded with the first split",
            first.display()
        )));
    }
    let paths = if given.is_empty() { list_splits(first, n_split)? } else { given.to_vec() };
    if paths.len() != usize::from(n_split) {
        return Err(Error::model(format!(
            "invalid split count, given: {} splits, but expected {n_split}",
            paths.len()
        )));
    }
    let mut files = vec![main];
    for (i, p) in paths.iter().enumerate().skip(1) {
        let f = GgufFile::open(p)
            .map_err(|e| Error::model(format!("failed to load GGUF split from {}: {e}", p.display())))?;
        let no = get_u16(&f, KEY_SPLIT_NO)?
            .ok_or_else(|| Error::model(format!("missing key {KEY_SPLIT_NO} in GGUF split {}", p.display())))?;
        if usize::from(no) != i {
            return Err(Error::model(format!("invalid split file idx: {no} (file: {}), expected {i}", p.display())));
        }
        files.push(f);
    }
    let expected = match files[0].get(KEY_SPLIT_TENSORS_COUNT) {
        None => return Err(Error::model(format!("key not found in model: {KEY_SPLIT_TENSORS_COUNT}"))),
        Some(Value::I32(n)) => n,
        Some(v) => {
            return Err(Error::model(format!(
                "key {KEY_SPLIT_TENSORS_COUNT} has wrong type {} but expected type i32",
                v.type_name()
            )))
        }
    };
    let found: usize = files.iter().map(GgufFile::n_tensors).sum();
    if i64::from(expected) != found as i64 {
        return Err(Error::model(format!("corrupted model: {expected} tensors expected but {found} found")));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ggml_type::GgmlType;
    use crate::gguf::{GgufWriter, OwnedValue};

    /// Writes a 2-part set under a fresh directory; `edit` may change
    /// each part's writer (part index, writer) before it is written.
    fn two_parts(edit: impl Fn(usize, &mut GgufWriter)) -> (PathBuf, Vec<PathBuf>) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("minfer-split-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut paths = Vec::new();
        for i in 0..2 {
            let mut w = GgufWriter::new();
            if i == 0 {
                w.add("general.architecture", "llama");
            }
            w.add_tensor(&format!("t{i}"), GgmlType::F32, &[4], vec![0u8; 16]);
            w.set_last(KEY_SPLIT_NO.as_bytes(), OwnedValue::U16(i as u16));
            w.set_last(KEY_SPLIT_TENSORS_COUNT.as_bytes(), OwnedValue::I32(2));
            w.set_last(KEY_SPLIT_COUNT.as_bytes(), OwnedValue::U16(2));
            edit(i, &mut w);
            let p = path_from(&split_path(dir.join("m").as_os_str().as_encoded_bytes(), i as i32, 2));
            w.write_file(&p).unwrap();
            paths.push(p);
        }
        (dir, paths)
    }

    #[test]
    fn a_good_set_opens_from_its_first_part() {
        let (dir, paths) = two_parts(|_, _| {});
        assert_eq!(open_parts(&paths[0], &[]).unwrap().len(), 2);
        assert_eq!(open_parts(&paths[0], &paths).unwrap().len(), 2);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn broken_sets_are_refused_with_the_reference_messages() {
        type Breaker<'a> = &'a dyn Fn(usize, &mut GgufWriter);
        let cases: [(Breaker, &str); 4] = [
            (
                &|i, w| {
                    if i == 0 {
                        w.set_last(KEY_SPLIT_TENSORS_COUNT.as_bytes(), OwnedValue::I32(3));
                    }
                },
                "corrupted model: 3 tensors expected but 2 found",
            ),
            (
                &|i, w| {
                    if i == 1 {
                        w.set_last(KEY_SPLIT_NO.as_bytes(), OwnedValue::U32(1));
                    }
                },
                "key split.no has wrong type u32",
            ),
            (
                &|i, w| {
                    if i == 1 {
                        w.remove(KEY_SPLIT_NO);
                    }
                },
                "missing key split.no in GGUF split",
            ),
            (
                &|i, w| {
                    if i == 0 {
                        w.set_last(KEY_SPLIT_COUNT.as_bytes(), OwnedValue::I32(2));
                    }
                },
                "key split.count has wrong type i32",
            ),
        ];
        for (edit, want) in cases {
            let (dir, paths) = two_parts(edit);
            let e = open_parts(&paths[0], &[]).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            std::fs::remove_dir_all(dir).ok();
        }
    }

    #[test]
    fn names_round_trip() {
        let p = split_path(b"/m/model", 1, 3);
        assert_eq!(p, b"/m/model-00002-of-00003.gguf");
        assert_eq!(split_prefix(&p, 1, 3), Some(&b"/m/model"[..]));
        assert_eq!(split_prefix(&p, 0, 3), None);
        assert_eq!(split_prefix(b"-00002-of-00003.gguf", 1, 3), None);
        let list = list_splits(Path::new("/m/x-00001-of-00002.gguf"), 2).unwrap();
        assert_eq!(list, vec![PathBuf::from("/m/x-00001-of-00002.gguf"), PathBuf::from("/m/x-00002-of-00002.gguf")]);
        assert!(list_splits(Path::new("/m/x.gguf"), 2).unwrap_err().to_string().contains("invalid split file name"));
    }
}
