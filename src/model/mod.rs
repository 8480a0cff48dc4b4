//! A loaded model: its GGUF file(s), architecture, hyperparameters, metadata
//! and vocabulary facts. Weights stay in the mapping (zero-copy).

pub mod arch;
pub mod from_user;
pub mod ftype;
pub mod hparams;
pub mod lora;
pub mod metadata;
pub mod quantize;
pub mod repacked;
pub mod save;
pub mod split;
pub mod vocab_info;
pub mod weights;

use crate::error::{Error, Result};
use crate::gguf::{GgufFile, TensorInfo, Value};
use crate::vocab::Vocab;
use arch::Family;
use hparams::{HParams, Keys};
use metadata::{Metadata, Overrides};
use std::collections::HashMap;
use std::ffi::CString;
use weights::Weights;

/// LLAMA_MAX_SEQ of the reference: the most sequences a context can hold.
pub const MAX_SEQ: usize = 256;

/// Where the GGUF bytes come from.
pub enum Source<'a> {
    /// One file, or the first of a split set (`<prefix>-00001-of-0000N.gguf`):
    /// the other parts are found by name.
    Path(&'a std::path::Path),
    /// A GGUF embedded in an open file, starting at `base`.
    FileAt(&'a std::fs::File, u64),
    /// The parts of a split model, in order.
    Splits(&'a [std::path::PathBuf]),
}

/// What the caller asked for (decoded from llama_model_params).
#[derive(Default)]
pub struct LoadParams<'a> {
    pub vocab_only: bool,
    pub overrides: Overrides,
    /// Called with a fraction in [0, 1]; returning false cancels the load.
    pub progress: Option<&'a mut dyn FnMut(f32) -> bool>,
}

pub struct Model {
    /// The GGUF files; metadata comes from the first.
    pub files: Vec<GgufFile>,
    pub arch_name: String,
    /// None when the architecture is one minfer does not run (vocab_only).
    pub arch: Option<&'static Family>,
    pub hparams: HParams,
    pub metadata: Metadata,
    /// The vocabulary and its tokenizer (`llama_model_get_vocab` points here).
    pub vocab: Vocab,
    /// llama_ftype, with the GUESSED bit when the file does not say.
    pub ftype: i32,
    pub desc: CString,
    pub n_params: u64,
    pub n_bytes: u64,
    pub vocab_only: bool,
    /// The bound weights (None with vocab_only).
    pub weights: Option<Weights>,
    /// The matrices interleaved at load for the kernel set in use.
    pub repacked: repacked::Repacked,
    /// The one-row weights (`Weights::vectors`) as f32, by (file, tensor
    /// data offset).
    pub vectors: HashMap<(usize, u64), Vec<f32>>,
    /// The caller's kv overrides (saving reads hyperparameters through them).
    pub overrides: Overrides,
}

fn open_all(source: &Source) -> Result<Vec<GgufFile>> {
    match source {
        Source::Path(p) => split::open_parts(p, &[]),
        // A GGUF inside an open file is one part (as in the reference).
        Source::FileAt(f, base) => Ok(vec![GgufFile::open_file_at(f, *base)?]),
        Source::Splits(paths) => match paths.first() {
            Some(first) => split::open_parts(first, paths),
            None => Err(Error::invalid("no split paths given")),
        },
    }
}

impl Model {
    pub fn load(source: Source, mut params: LoadParams) -> Result<Model> {
        let files = open_all(&source)?;
        let first = &files[0];

        let arch_name = match first.get("general.architecture").as_ref() {
            Some(Value::Str(s)) => String::from_utf8_lossy(first.str_bytes(s)).into_owned(),
            Some(v) => {
                return Err(Error::model(format!("general.architecture has type {}, expected a string", v.type_name())))
            }
            None => return Err(Error::model("key not found in model: general.architecture")),
        };
        let arch = arch::find(&arch_name);
        if arch.is_none() && !params.vocab_only {
            return Err(Error::model(format!(
                "model architecture '{arch_name}' is not supported by minfer (supported: {}; \
                 other architectures load only with vocab_only)",
                arch::supported_list()
            )));
        }

        let metadata = Metadata::from_gguf(first);
        let vocab = Vocab::load(first, &params.overrides)?;
        let n_vocab = u32::try_from(vocab.n_tokens()).unwrap_or(u32::MAX);

        // Tensors are found by name in each file's own index (no copy of
        // the names).
        let (mut n_params, mut n_bytes) = (0u64, 0u64);
        for (fi, f) in files.iter().enumerate() {
            for t in f.tensors() {
                if files[..fi].iter().any(|g| g.find_tensor_index(&t.name).is_some()) {
                    return Err(Error::model(format!("invalid model: tensor '{}' is duplicated", t.name)));
                }
                n_params = n_params.saturating_add(t.n_elements());
                n_bytes = n_bytes.saturating_add(t.nbytes);
            }
        }

        let hparams = if params.vocab_only {
            HParams { n_vocab, ..HParams::default() }
        } else {
            let keys = Keys { file: first, arch: &arch_name, overrides: &params.overrides };
            let mut hp = HParams::read(&keys, n_vocab)?;
            if let Some(family) = arch {
                (family.read_hparams)(&mut hp, &keys)?;
            }
            hp.check_runnable(&arch_name)?;
            hp
        };

        let ftype = match first.get("general.file_type").and_then(|v| v.as_u64()) {
            Some(ft) => i32::try_from(ft).unwrap_or(ftype::GUESSED),
            None => ftype::guess(files.iter().flat_map(|f| f.tensors().map(|t| t.ggml_type))),
        };
        let size_name = match arch {
            Some(family) if !params.vocab_only => (family.size_name)(&hparams),
            _ => "?B",
        };
        // With vocab_only the reference reads no file type and leaves the
        // description empty; so does minfer.
        let (ftype, desc) = if params.vocab_only {
            (0, String::new())
        } else {
            (ftype, format!("{arch_name} {size_name} {}", ftype::name_c(ftype).to_string_lossy()))
        };

        let weights = match arch {
            Some(a) if !params.vocab_only => Some(Weights::bind(a, &hparams, &files)?),
            _ => None,
        };

        let repacked = match &weights {
            Some(w) => repacked::Repacked::build(crate::kernels::kernels(), &files, w)?,
            None => repacked::Repacked::none(),
        };
        if repacked.bytes() > 0 {
            let (tiled, copied) = repacked.counts();
            crate::log_info!(
                "load: {tiled} matrices repacked, {copied} float matrices copied ({:.2} MiB, huge pages requested)",
                repacked.bytes() as f64 / (1 << 20) as f64
            );
        }

        // The norms, biases and rope factors as f32, read from the file once:
        // the forward pass reads them every ubatch, and where the page cache
        // holds the file in 2 MiB folios each read of a 2 KB norm maps a
        // whole huge page (tens of MB of RSS, where the rest of those pages
        // was copied at load and released).
        let mut vectors = HashMap::new();
        for w in weights.iter().flat_map(|w| w.vectors()) {
            if let std::collections::hash_map::Entry::Vacant(e) = vectors.entry((w.file, w.info.offset)) {
                let data = files[w.file].read_tensor(&w.info)?;
                let mut out = vec![0f32; w.info.n_elements() as usize];
                crate::quant::dequantize_row(w.ty(), &data, &mut out)
                    .map_err(|e| Error::model(format!("tensor '{}': {e}", w.info.name)))?;
                e.insert(out);
            }
        }

        // Tensor data is mapped, not read; the progress callback still sees
        // the load advance tensor by tensor, and may cancel it.
        if !params.vocab_only {
            if let Some(progress) = params.progress.as_mut() {
                let total = n_bytes.max(1) as f64;
                let mut done = 0u64;
                for f in &files {
                    for t in f.tensors() {
                        if !progress((done as f64 / total) as f32) {
                            return Err(Error::Cancelled);
                        }
                        done = done.saturating_add(t.nbytes);
                    }
                }
                if !progress(1.0) {
                    return Err(Error::Cancelled);
                }
            }
        }

        Ok(Model {
            files,
            arch_name,
            arch,
            hparams,
            metadata,
            vocab,
            ftype,
            desc: CString::new(desc).unwrap_or_default(),
            n_params,
            n_bytes,
            vocab_only: params.vocab_only,
            weights,
            repacked,
            vectors,
            overrides: params.overrides,
        })
    }

    /// A tensor by name, with the file holding its data.
    /// Whether the model is an encoder (`arch::Encoder`: BERT and its
    /// relatives), which runs without memory.
    pub fn is_encoder(&self) -> bool {
        self.arch.is_some_and(|f| f.block.encoder.is_some())
    }

    pub fn tensor(&self, name: &str) -> Option<(&GgufFile, TensorInfo)> {
        self.files.iter().find_map(|f| Some((f, f.find_tensor(name)?)))
    }

    /// The chat template named `name` (`tokenizer.chat_template.<name>`), or
    /// the default one (`tokenizer.chat_template`). The string lives as long
    /// as the model.
    pub fn chat_template(&self, name: Option<&str>) -> Option<std::sync::Arc<std::ffi::CStr>> {
        let key = match name {
            Some(n) => format!("tokenizer.chat_template.{n}"),
            None => "tokenizer.chat_template".to_string(),
        };
        self.metadata.get_pinned(&self.files[0], key.as_bytes())
    }
}
