//! Developer aid for parity work: with `MINFER_DUMP_DIR` set, the forward
//! pass writes its intermediate tensors there under the reference's graph
//! names (`attn_norm-0`, `Qcur-0`, `kqv_out-0`, `l_out-0`, `result_norm`, …)
//! so that they can be compared with the reference's, taken through its
//! `cb_eval` callback. File layout: i64 ne[4] (ne0 fastest), then f32 data.
//! Unset (the normal case) this costs one cached environment lookup.

use std::sync::OnceLock;

fn dir() -> Option<&'static str> {
    static DIR: OnceLock<Option<String>> = OnceLock::new();
    DIR.get_or_init(|| std::env::var("MINFER_DUMP_DIR").ok()).as_deref()
}

/// Whether dumping is on.
pub fn enabled() -> bool {
    dir().is_some()
}

/// Writes `data` ([rows][width]) as tensor `name` (with `-il` appended for
/// a layer), best effort: a write error is ignored.
pub fn tensor(name: &str, il: Option<usize>, data: &[f32], width: usize) {
    let Some(dir) = dir() else { return };
    let name = match il {
        Some(il) => format!("{name}-{il}"),
        None => name.to_string(),
    };
    let ne = [width as i64, (data.len() / width.max(1)) as i64, 1, 1];
    let mut bytes = Vec::with_capacity(32 + data.len() * 4);
    ne.iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
    data.iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
    let _ = std::fs::write(format!("{dir}/{name}.bin"), bytes);
}
