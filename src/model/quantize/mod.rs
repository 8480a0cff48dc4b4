//! `llama_model_quantize`: rewrite a model file with its tensors converted to
//! the types of a file type, as the reference's src/llama-quant.cpp does —
//! same tensor order, same metadata, same per-tensor type choice, same bytes
//! (without an importance matrix the output is byte-identical; tested
//! against the reference library's outputs by checksum).
//!
//! Steps: open the input (and its other parts when split); read the few
//! hyperparameters the type choice needs; list the tensors in the
//! reference's order (by layer number, then name); choose every tensor's
//! type (`choose.rs`) and check everything that could fail before a byte is
//! written; write the metadata (the input's pairs, then
//! general.quantization_version, general.file_type, the caller's overrides)
//! and tensor infos; then convert or copy each tensor in bounded slabs of
//! rows on `nthread` threads, validating input and output as ggml does.

mod choose;

use crate::error::{Error, Result};
use crate::ggml_type::GgmlType;
use crate::gguf::{GgufFile, GgufWriter, OwnedArray, OwnedValue, TensorInfo};
use crate::model::ftype as ft;
use crate::model::hparams::{Keys, MAX_LAYERS};
use crate::model::metadata::{Override, Overrides};
use crate::model::split;
use crate::quant;
use crate::regex::bytes::Regex;
use choose::{Chooser, ModelFacts};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The reference's LLAMA_QUANT_MAX_BUF_SIZE: at most 8 GiB of rows in flight.
pub const MAX_BUF_SIZE: usize = 8 << 30;
/// GGML_QNT_VERSION, written as general.quantization_version.
const QNT_VERSION: u32 = 2;

/// `llama_model_quantize_params`, decoded from C.
#[derive(Debug, Clone)]
pub struct QuantizeParams {
    /// Threads; ≤ 0 means the number of CPUs.
    pub nthread: i32,
    pub ftype: i32,
    /// Raw ggml_type values; ≥ GGML_TYPE_COUNT means "not set".
    pub output_tensor_type: u32,
    pub token_embedding_type: u32,
    pub allow_requantize: bool,
    pub quantize_output_tensor: bool,
    pub only_copy: bool,
    pub pure: bool,
    pub keep_split: bool,
    pub dry_run: bool,
    /// The importance matrix entries (name, values), if a list was given.
    pub imatrix: Option<Vec<(String, Vec<f32>)>>,
    /// kv overrides in the caller's order.
    pub kv_overrides: Vec<(String, Override)>,
    /// Tensor-type overrides: (regex searched in the tensor name, raw type).
    pub tt_overrides: Vec<(String, u32)>,
    pub prune_layers: Vec<i32>,
    /// 0 means MAX_BUF_SIZE.
    pub max_buf_size: usize,
}

impl Default for QuantizeParams {
    /// llama_model_quantize_default_params.
    fn default() -> Self {
        QuantizeParams {
            nthread: 0,
            ftype: ft::Q8_0,
            output_tensor_type: crate::ggml_type::GGML_TYPE_COUNT,
            token_embedding_type: crate::ggml_type::GGML_TYPE_COUNT,
            allow_requantize: false,
            quantize_output_tensor: true,
            only_copy: false,
            pure: false,
            keep_split: false,
            dry_run: false,
            imatrix: None,
            kv_overrides: Vec::new(),
            tt_overrides: Vec::new(),
            prune_layers: Vec::new(),
            max_buf_size: MAX_BUF_SIZE,
        }
    }
}

/// `sscanf(name, "blk.%d.", &il)`: the layer number of a per-layer tensor.
pub fn blk_number(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("blk.")?.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let n = digits.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    let v = digits[..n].parse::<i64>().unwrap_or(i64::MAX);
    Some(if neg { -v } else { v } as i32)
}

/// The reference's `weight_name_comparer`: by `blk.N.` number (-1 for
/// tensors outside the blocks), then by name bytes.
fn weight_order(a: &str, b: &str) -> std::cmp::Ordering {
    let la = blk_number(a).unwrap_or(-1);
    let lb = blk_number(b).unwrap_or(-1);
    la.cmp(&lb).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// One tensor of the input and what happens to it.
struct Item {
    /// The name written (after layer pruning).
    name: String,
    /// Index of the part holding it, and its info there (decoded from
    /// the part's index).
    file: usize,
    info: TensorInfo,
    new_type: GgmlType,
    /// The importance weights it is quantized with: `ne[0]` per expert
    /// (`ne[0]·ne[2]` in all), the reference's `imatrix` for the tensor.
    imatrix: Option<Vec<f32>>,
}

impl Item {
    /// The shape written (gguf.cpp drops trailing dimensions of 1).
    fn ne(&self) -> Vec<u64> {
        self.info.ggml_shape()
    }
}

/// A C string's bytes up to its first NUL (gguf.cpp copies keys and
/// strings through `c_str()`).
fn c_trunc(b: &[u8]) -> Vec<u8> {
    b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())].to_vec()
}

/// A value of the input as gguf_set_kv copies it: strings cut at a NUL.
fn copied_value(v: OwnedValue) -> OwnedValue {
    match v {
        OwnedValue::Str(s) => OwnedValue::Str(c_trunc(&s)),
        OwnedValue::Array(OwnedArray::Str(a)) => {
            OwnedValue::Array(OwnedArray::Str(a.iter().map(|s| c_trunc(s)).collect()))
        }
        v => v,
    }
}

/// Removes the layers in `prune` and renumbers the rest (`remap_layer`):
/// the new name, or None for a pruned tensor. `mapped` and `next_id` carry
/// the numbering across tensors in order.
fn remap_layer(
    name: &str,
    prune: &[i32],
    mapped: &mut BTreeMap<i32, String>,
    next_id: &mut i32,
) -> Result<Option<String>> {
    let Some(&first) = prune.first() else { return Ok(Some(name.to_string())) };
    // the regex blk\.(\d+)\. : its leftmost match
    let b = name.as_bytes();
    let found = (0..b.len()).find_map(|s| {
        let rest = b.get(s..)?.strip_prefix(b"blk.")?;
        let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        (n > 0 && rest.get(n) == Some(&b'.')).then_some((s + 4, n))
    });
    let Some((at, n)) = found else { return Ok(Some(name.to_string())) };
    let blk: i32 = name[at..at + n]
        .parse()
        .map_err(|_| Error::invalid(format!("stoi: layer number out of range in tensor name {name}")))?;
    if let std::collections::btree_map::Entry::Vacant(slot) = mapped.entry(blk) {
        let id = if prune.contains(&blk) {
            String::new()
        } else if blk < first {
            *next_id = blk + 1;
            blk.to_string()
        } else {
            *next_id += 1;
            (*next_id - 1).to_string()
        };
        slot.insert(id);
    }
    let id = &mapped[&blk];
    Ok((!id.is_empty()).then(|| format!("{}{}{}", &name[..at], id, &name[at + n..])))
}

/// `remap_imatrix`: the input layer whose imatrix entry a renumbered tensor uses.
fn remap_imatrix(name: &str, mapped: &BTreeMap<i32, String>) -> Result<String> {
    if mapped.is_empty() {
        return Ok(name.to_string());
    }
    let b = name.as_bytes();
    let found = (0..b.len()).find_map(|s| {
        let rest = b.get(s..)?.strip_prefix(b"blk.")?;
        let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        (n > 0 && rest.get(n) == Some(&b'.')).then_some((s + 4, n))
    });
    let Some((at, n)) = found else { return Ok(name.to_string()) };
    let blk = &name[at..at + n];
    for (orig, id) in mapped {
        if id == blk {
            return Ok(format!("{}{}{}", &name[..at], orig, &name[at + n..]));
        }
    }
    Err(Error::model(format!("imatrix mapping error for {name}")))
}

/// A u32 hyperparameter as the reference's loader reads it: an integer
/// override wins (converted as C converts int64 to uint32), else the file.
fn loader_u32(keys: &Keys, key: &str) -> Result<Option<u32>> {
    match keys.overrides.get(&keys.full(key)) {
        Some(Override::Int(v)) => Ok(Some(*v as u32)),
        _ => keys.u32(key),
    }
}

/// The hyperparameters the type choice reads, with the caller's overrides
/// (the reference's loader applies them).
fn model_facts(first: &GgufFile, overrides: &Overrides) -> Result<ModelFacts> {
    let arch = first
        .get_str("general.architecture")
        .ok_or_else(|| Error::model("key not found in model: general.architecture (or not a string)"))?
        .to_string();
    let keys = Keys { file: first, arch: &arch, overrides };
    let required = |key: &str| -> Result<u32> {
        loader_u32(&keys, key)?.ok_or_else(|| Error::model(format!("key not found in model: {}", keys.full(key))))
    };
    required("%s.context_length")?;
    required("%s.embedding_length")?;
    let n_layer = required("%s.block_count")?;
    if n_layer == 0 || n_layer > MAX_LAYERS {
        return Err(Error::model(format!("{arch}.block_count = {n_layer} is out of range [1, {MAX_LAYERS}]")));
    }
    let per_layer = |key: &str| -> Result<Option<u32>> {
        match keys.overrides.get(&keys.full(key)) {
            Some(Override::Int(v)) => Ok(Some(*v as u32)),
            _ => Ok(keys.u32_per_layer(key, n_layer)?.map(|v| v[0])),
        }
    };
    let n_head = per_layer("%s.attention.head_count")?.unwrap_or(0);
    let n_head_kv = per_layer("%s.attention.head_count_kv")?.unwrap_or(n_head);
    let n_expert = loader_u32(&keys, "%s.expert_count")?.unwrap_or(0);
    let is_70b = match arch.as_str() {
        "llama" => n_expert != 8 && n_layer == 80 && n_head != n_head_kv,
        "qwen2" | "deci" | "olmo" => n_layer == 80,
        "jais2" => n_layer == 68,
        _ => false,
    };
    Ok(ModelFacts { arch, n_layer: n_layer as i32, n_head, n_head_kv, n_expert, is_70b })
}

/// The file type the input declares (general.file_type, a u32), or the
/// reference's guess from its most common tensor type (in `items` order).
fn input_ftype(first: &GgufFile, overrides: &Overrides, types: impl Iterator<Item = GgmlType>) -> Result<i32> {
    if let Some(Override::Int(v)) = overrides.get("general.file_type") {
        return Ok(*v as i32);
    }
    match first.get("general.file_type") {
        Some(crate::gguf::Value::U32(v)) => Ok(v as i32),
        Some(v) => {
            Err(Error::model(format!("key general.file_type has wrong type {} but expected type u32", v.type_name())))
        }
        None => Ok(ft::guess(types)),
    }
}

/// The pairs of the output's first (or only) part, in the reference's order.
fn output_kvs(
    first: &GgufFile,
    p: &QuantizeParams,
    ftype: i32,
    pruned_blocks: Option<(String, i32)>,
) -> Result<GgufWriter<'static>> {
    let mut w = GgufWriter::new();
    for i in 0..first.n_kv() {
        let key = c_trunc(first.key_bytes(i).unwrap_or_default());
        let (_, v) = first.kv(i);
        let v = first
            .to_owned_value(&v)
            .ok_or_else(|| Error::model(format!("cannot copy the value of key '{}'", String::from_utf8_lossy(&key))))?;
        w.set_last(&key, copied_value(v));
    }
    w.set_last(b"general.quantization_version", OwnedValue::U32(QNT_VERSION));
    w.set_last(b"general.file_type", OwnedValue::U32(ftype as u32));
    for k in [split::KEY_SPLIT_NO, split::KEY_SPLIT_COUNT, split::KEY_SPLIT_TENSORS_COUNT] {
        w.remove(k);
    }
    for (key, o) in &p.kv_overrides {
        let v = match o {
            Override::Float(x) => OwnedValue::F32(*x as f32),
            // the reference writes integer overrides as u32 (llama.cpp #14182)
            Override::Int(x) => OwnedValue::U32(x.wrapping_abs() as u32),
            Override::Bool(b) => OwnedValue::Bool(*b),
            Override::Str(s) => OwnedValue::Str(c_trunc(s.as_bytes())),
        };
        if key == crate::gguf::ALIGNMENT_KEY && !matches!(v, OwnedValue::U32(a) if a.is_power_of_two()) {
            return Err(Error::invalid(format!("kv override of {key} must be a power of two")));
        }
        w.set_last(key.as_bytes(), v);
    }
    if let Some((key, n)) = pruned_blocks {
        w.set_last(key.as_bytes(), OwnedValue::U32(n as u32));
    }
    Ok(w)
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Io { path: path.display().to_string(), reason: e.to_string() }
}

/// Whether `out` names one of the input files (writing would destroy it).
fn is_same_file(out: &Path, inputs: &[PathBuf]) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(o) = std::fs::metadata(out) else { return false };
    inputs.iter().any(|p| std::fs::metadata(p).is_ok_and(|m| m.dev() == o.dev() && m.ino() == o.ino()))
}

/// Quantizes `inp` into `out` (`llama_model_quantize`).
pub fn quantize(inp: &Path, out: &Path, p: &QuantizeParams) -> Result<()> {
    let default_type =
        choose::default_type(p.ftype).ok_or_else(|| Error::invalid(format!("invalid output file type {}", p.ftype)))?;
    if !quant::is_chunk_type(default_type) {
        return Err(Error::invalid(format!(
            "file type {} ({}) needs tensor type {default_type}, which minfer cannot quantize to",
            p.ftype,
            ft::name_c(p.ftype).to_string_lossy()
        )));
    }
    let nthread =
        if p.nthread > 0 { p.nthread as usize } else { std::thread::available_parallelism().map_or(1, usize::from) };

    // --- the input, and the loader's view of it
    let files = split::open_parts(inp, &[])?;
    let input_paths: Vec<PathBuf> =
        if files.len() > 1 { split::list_splits(inp, files.len() as u16)? } else { vec![inp.to_path_buf()] };
    let first = &files[0];
    let mut overrides = Overrides::default();
    for (k, v) in &p.kv_overrides {
        // the loader keeps the first override of a key
        overrides.0.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let facts = model_facts(first, &overrides)?;

    let imatrix: Option<HashMap<&str, &[f32]>> = match &p.imatrix {
        None => None,
        Some(list) => {
            crate::log_info!("llama_model_quantize: have importance matrix data with {} entries", list.len());
            let mut m = HashMap::new();
            for (name, data) in list {
                if let Some(v) = data.iter().find(|v| !v.is_finite()) {
                    return Err(Error::invalid(format!("imatrix contains non-finite value {v:.6}")));
                }
                m.entry(name.as_str()).or_insert(data.as_slice());
            }
            Some(m)
        }
    };

    // --- tensors in the reference's order, pruned and renamed
    let mut all: Vec<(usize, TensorInfo)> =
        files.iter().enumerate().flat_map(|(fi, f)| f.tensors().map(move |t| (fi, t))).collect();
    all.sort_by(|a, b| weight_order(&a.1.name, &b.1.name));
    let ftype_out =
        if p.only_copy { input_ftype(first, &overrides, all.iter().map(|t| t.1.ggml_type))? } else { p.ftype };
    let mut mapped = BTreeMap::new();
    let mut next_id = 0;
    let mut items = Vec::with_capacity(all.len());
    for (fi, t) in all {
        if let Some(name) = remap_layer(&t.name, &p.prune_layers, &mut mapped, &mut next_id)? {
            items.push(Item { name, file: fi, new_type: t.ggml_type, info: t, imatrix: None });
        }
    }
    let pruned_blocks = (!p.prune_layers.is_empty()).then(|| (format!("{}.block_count", facts.arch), next_id));
    if p.keep_split {
        items.sort_by_key(|it| (it.file, files[it.file].data_offset() + it.info.offset));
    }

    // --- the type of every tensor, and every check that can fail up front
    let mut patterns = Vec::new();
    for (pat, ty) in &p.tt_overrides {
        let re = Regex::new(pat).map_err(|e| Error::invalid(format!("tensor type pattern '{pat}': {e}")))?;
        let ty = choose::user_type(*ty, "tensor type override")?
            .ok_or_else(|| Error::invalid(format!("tensor type override for '{pat}' has no valid type {ty}")))?;
        patterns.push((re, ty));
    }
    let mut chooser = Chooser::new(p, &facts, items.iter().map(|it| it.name.as_str()), imatrix.is_some(), patterns);
    let mut will_require_imatrix = false;
    for it in &mut items {
        let name = it.name.clone();
        let allows = choose::allows_quantization(p, &facts.arch, &name, &it.info);
        if allows {
            it.new_type = chooser.get_type(&name, &it.info.ne, default_type)?;
        }
        let cur = it.info.ggml_type;
        let requires = choose::requires_imatrix(&name, it.new_type, ftype_out);
        if imatrix.is_none() && allows && requires {
            if p.dry_run {
                will_require_imatrix = true;
            } else {
                return Err(Error::invalid(format!(
                    "this quantization requires an importance matrix (tensor {name}, target type {})",
                    it.new_type
                )));
            }
        }
        if p.dry_run || cur == it.new_type {
            continue;
        }
        // the checks the reference makes when it reaches the tensor
        if let Some(m) = &imatrix {
            let key = remap_imatrix(&name, &mapped)?;
            let expected = (it.info.ne[0] as u64).saturating_mul(it.info.ne[2] as u64);
            match m.get(key.as_str()) {
                None => crate::log_info!("llama_model_quantize: did not find weights for {name}"),
                Some(d) if d.len() as u64 == expected => it.imatrix = Some(d.to_vec()),
                Some(d) if !choose::is_token_embd(&name) => {
                    return Err(Error::invalid(format!(
                        "imatrix size {} is different from tensor size {expected} for {name}",
                        d.len()
                    )))
                }
                Some(d) => crate::log_info!(
                    "llama_model_quantize: imatrix size {} is different from tensor size {expected} for {name}",
                    d.len()
                ),
            }
        }
        if requires && it.imatrix.is_none() {
            return Err(Error::invalid(format!(
                "Missing importance matrix for tensor {name} in a very low-bit quantization"
            )));
        }
        if cur.is_quantized() && !p.allow_requantize {
            return Err(Error::invalid(format!("requantizing from type {cur} is disabled")));
        }
        if !quant::is_supported(cur) || matches!(cur, GgmlType::Q8_1 | GgmlType::Q8_K) {
            return Err(Error::invalid(format!("tensor {name}: minfer cannot convert from type {cur}")));
        }
        if !quant::is_chunk_type(it.new_type) {
            return Err(Error::invalid(format!("tensor {name}: minfer cannot quantize to type {}", it.new_type)));
        }
    }

    // --- the output parts: metadata and tensor infos
    let n_split = if p.keep_split { items.iter().map(|it| it.file + 1).max().unwrap_or(1) } else { 1 };
    let mut parts: Vec<GgufWriter> = vec![output_kvs(first, p, ftype_out, pruned_blocks)?];
    parts.resize_with(n_split, GgufWriter::new);
    let part_of = |it: &Item| if p.keep_split { it.file } else { 0 };
    for it in &items {
        parts[part_of(it)].add_tensor_info(&it.name, it.new_type, &it.ne());
    }
    if n_split > 1 {
        for (i, w) in parts.iter_mut().enumerate() {
            w.set_last(split::KEY_SPLIT_NO.as_bytes(), OwnedValue::U16(i as u16));
            w.set_last(split::KEY_SPLIT_COUNT.as_bytes(), OwnedValue::U16(n_split as u16));
            w.set_last(split::KEY_SPLIT_TENSORS_COUNT.as_bytes(), OwnedValue::I32(items.len() as i32));
        }
    }

    let total_in: u64 = items.iter().map(|it| it.info.nbytes).sum();
    let total_out: u64 = items.iter().map(|it| it.new_type.nbytes(&it.ne()).unwrap_or(0)).sum();
    let n_elements: u64 = items.iter().map(|it| it.info.n_elements()).sum::<u64>().max(1);
    let mib = |b: u64| b as f64 / 1024.0 / 1024.0;
    if p.dry_run {
        for (i, it) in items.iter().enumerate() {
            crate::log_info!(
                "[{:4}/{:4}] {:<36} - type {:>6} -> {:>6}",
                i + 1,
                items.len(),
                it.name,
                it.info.ggml_type,
                it.new_type
            );
        }
    } else {
        let out_paths: Vec<PathBuf> = if p.keep_split {
            use std::os::unix::ffi::{OsStrExt, OsStringExt};
            (0..n_split)
                .map(|i| {
                    let b = split::split_path(out.as_os_str().as_bytes(), i as i32, n_split as i32);
                    PathBuf::from(std::ffi::OsString::from_vec(b))
                })
                .collect()
        } else {
            vec![out.to_path_buf()]
        };
        if let Some(o) = out_paths.iter().find(|o| is_same_file(o, &input_paths)) {
            return Err(Error::invalid(format!("the output file {} is an input file", o.display())));
        }
        let mut conv = Converter { nthread, max_buf: if p.max_buf_size == 0 { MAX_BUF_SIZE } else { p.max_buf_size } };
        for (part, path) in out_paths.iter().enumerate() {
            let its: Vec<&Item> = items.iter().filter(|it| part_of(it) == part).collect();
            let written = write_part(&parts[part], &its, &files, path, &mut conv, items.len());
            if let Err(e) = written {
                // no half-written model is left behind
                for p in &out_paths {
                    let _ = std::fs::remove_file(p);
                }
                return Err(e);
            }
        }
    }
    crate::log_info!(
        "llama_model_quantize: model size  = {:8.2} MiB ({:.2} BPW)",
        mib(total_in),
        total_in as f64 * 8.0 / n_elements as f64
    );
    crate::log_info!(
        "llama_model_quantize: quant size  = {:8.2} MiB ({:.2} BPW)",
        mib(total_out),
        total_out as f64 * 8.0 / n_elements as f64
    );
    if p.dry_run && will_require_imatrix {
        crate::log_warn!("llama_model_quantize: WARNING: dry run completed successfully, but actually completing this quantization will require an imatrix!");
    }
    if chooser.n_fallback > 0 {
        crate::log_warn!(
            "llama_model_quantize: WARNING: {} of {} tensor(s) required fallback quantization",
            chooser.n_fallback,
            items.len()
        );
    }
    Ok(())
}

/// Writes one output file: metadata, then each tensor's data and padding.
fn write_part(
    w: &GgufWriter,
    items: &[&Item],
    files: &[GgufFile],
    path: &Path,
    conv: &mut Converter,
    n_total: usize,
) -> Result<()> {
    let meta = w.meta_bytes()?;
    let file = std::fs::File::create(path).map_err(io_err(path))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    out.write_all(&meta).map_err(io_err(path))?;
    for (i, it) in items.iter().enumerate() {
        let src = files[it.file].tensor_data(&it.info);
        crate::log_info!(
            "[{:4}/{:4}] {:<36} - [{}], type = {:>6}, {}",
            i + 1,
            n_total,
            it.name,
            it.info.shape().iter().map(|n| format!("{n:5}")).collect::<Vec<_>>().join(", "),
            it.info.ggml_type,
            if it.new_type == it.info.ggml_type {
                String::from("copied")
            } else {
                format!("converting to {}", it.new_type)
            }
        );
        let n = if it.new_type == it.info.ggml_type {
            conv.copy(it, src, &mut out, path)?
        } else {
            conv.convert(it, src, &mut out, path)?
        };
        let pad = w.padding_after(n)?;
        out.write_all(&vec![0u8; pad as usize]).map_err(io_err(path))?;
    }
    out.flush().map_err(io_err(path))?;
    Ok(())
}

/// Copies and converts tensor data in slabs of whole rows.
struct Converter {
    nthread: usize,
    max_buf: usize,
}

impl Converter {
    /// Copies a tensor unchanged, validating it slab by slab.
    fn copy(&mut self, it: &Item, src: &[u8], out: &mut impl Write, path: &Path) -> Result<u64> {
        let row = (it.info.row_size() as usize).max(1);
        let slab = row.max(self.max_buf / row * row);
        for chunk in src.chunks(slab) {
            quant::validate_row_data(it.info.ggml_type, chunk)
                .map_err(|e| Error::model(format!("tensor '{}' has invalid data: {e}", it.info.name)))?;
            out.write_all(chunk).map_err(io_err(path))?;
        }
        Ok(src.len() as u64)
    }

    /// Converts a tensor: each slab of rows is validated, turned to f32 and
    /// quantized (rows split over the threads), the result validated.
    fn convert(&mut self, it: &Item, src: &[u8], out: &mut impl Write, path: &Path) -> Result<u64> {
        let (from, to) = (it.info.ggml_type, it.new_type);
        let n_per_row = it.info.ne[0] as usize;
        let nrows = it.info.n_rows() as usize;
        let row_src = it.info.row_size() as usize;
        let row_dst = to
            .row_size(n_per_row as u64)
            .ok_or_else(|| Error::model(format!("tensor {}: {n_per_row} columns do not fit type {to}", it.name)))?
            as usize;
        let per_row = row_src + row_dst + if from == GgmlType::F32 { 0 } else { n_per_row * 4 };
        // rows of expert e (ne[1] rows each) use imatrix[e·n_per_row..][..n_per_row]
        let rows_per_expert = (it.info.ne[1] as usize).max(1);
        let imatrix = it.imatrix.as_deref();
        let slab_rows = (self.max_buf / per_row.max(1)).clamp(1, nrows.max(1));
        let mut f32_buf: Vec<f32> = Vec::new();
        let mut dst: Vec<u8> = Vec::new();
        let mut written = 0u64;
        let mut r0 = 0;
        while r0 < nrows {
            let rows = slab_rows.min(nrows - r0);
            let s = &src[r0 * row_src..(r0 + rows) * row_src];
            quant::validate_row_data(from, s)
                .map_err(|e| Error::model(format!("tensor '{}' has invalid data: {e}", it.info.name)))?;
            f32_buf.resize(rows * n_per_row, 0.0);
            dst.resize(rows * row_dst, 0);
            // each thread takes a run of whole rows
            let per_thread = rows.div_ceil(self.nthread.max(1)).max(1);
            let results: Vec<Result<()>> = std::thread::scope(|scope| {
                let handles: Vec<_> = s
                    .chunks(per_thread * row_src)
                    .zip(f32_buf.chunks_mut(per_thread * n_per_row))
                    .zip(dst.chunks_mut(per_thread * row_dst))
                    .enumerate()
                    .map(|(t, ((s, f), d))| {
                        let first_row = r0 + t * per_thread;
                        scope.spawn(move || -> Result<()> {
                            quant::dequantize_row(from, s, f)?;
                            quantize_rows(to, f, d, n_per_row, row_dst, first_row, rows_per_expert, imatrix)?;
                            quant::validate_row_data(to, d)
                                .map_err(|e| Error::model(format!("quantized data validation failed: {e}")))
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(Error::model("a quantization thread panicked"))))
                    .collect()
            });
            results.into_iter().collect::<Result<Vec<()>>>()?;
            out.write_all(&dst).map_err(io_err(path))?;
            written += dst.len() as u64;
            r0 += rows;
        }
        Ok(written)
    }
}

/// Quantizes the rows `f` (the tensor's rows from `first_row` on) into `d`,
/// each run of rows of one expert with that expert's importance weights.
#[allow(clippy::too_many_arguments)]
fn quantize_rows(
    to: GgmlType,
    f: &[f32],
    d: &mut [u8],
    n_per_row: usize,
    row_dst: usize,
    first_row: usize,
    rows_per_expert: usize,
    imatrix: Option<&[f32]>,
) -> Result<()> {
    let Some(imatrix) = imatrix else {
        return quant::quantize_chunk(to, f, n_per_row, None, d);
    };
    let nrows = f.len() / n_per_row.max(1);
    let mut r = 0;
    while r < nrows {
        let g = first_row + r;
        let e = g / rows_per_expert;
        let run = (rows_per_expert - g % rows_per_expert).min(nrows - r);
        let w = imatrix
            .get(e * n_per_row..(e + 1) * n_per_row)
            .ok_or_else(|| Error::model(format!("imatrix has no weights for expert {e}")))?;
        quant::quantize_chunk(
            to,
            &f[r * n_per_row..(r + run) * n_per_row],
            n_per_row,
            Some(w),
            &mut d[r * row_dst..(r + run) * row_dst],
        )?;
        r += run;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
