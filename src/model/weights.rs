//! The weights of the architectures minfer runs, bound by name from the GGUF
//! tensor table with their shapes checked. A weight is a reference to tensor
//! bytes in the mapping; nothing is copied or dequantized here.

use super::arch::{ClsHead, Family, Ffn, GateUp, Moe, Need, Parallel, QkNorm, SharedExpert};
use super::hparams::HParams;
use crate::error::{Error, Result};
use crate::ggml_type::GgmlType;
use crate::gguf::{GgufFile, TensorInfo};

/// A weight tensor: which file holds it and its table entry.
#[derive(Debug, Clone)]
pub struct Weight {
    pub file: usize,
    pub info: TensorInfo,
}

impl Weight {
    pub fn ty(&self) -> GgmlType {
        self.info.ggml_type
    }
    /// Elements per row (ne[0]).
    pub fn cols(&self) -> usize {
        self.info.ne[0] as usize
    }
    /// Number of rows (product of ne[1..]).
    pub fn rows(&self) -> usize {
        (self.info.n_elements() / self.info.ne[0].max(1) as u64) as usize
    }
}

/// One transformer block. The optional tensors are bound as the family's
/// recipe (`arch::Block`) says.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm: Option<Weight>,   // [n_embd]
    pub attn_norm_b: Option<Weight>, // [n_embd] (LayerNorm)
    /// falcon 40B: the attention's input norm, `attn_norm` the FFN's.
    pub attn_norm_2: Option<Weight>, // [n_embd]
    pub attn_norm_2_b: Option<Weight>, // [n_embd]
    pub qkv: Qkv,                    // q, k, v: [n_embd, q_width], [n_embd, kv_width] ×2
    pub wo: Weight,                  // [n_head * head_dim, n_embd]
    pub bq: Option<Weight>,          // [q_width]
    pub bk: Option<Weight>,          // [kv_width]
    pub bv: Option<Weight>,          // [kv_width]
    pub bo: Option<Weight>,          // [n_embd]
    pub q_norm: Option<Weight>,      // [head_dim], [q_width] (QkNorm::Whole) or [head_dim, n_head]
    pub k_norm: Option<Weight>,      // [head_dim], or [kv_width]
    /// An encoder's LayerNorm biases of q and k (jina-bert-v2).
    pub q_norm_b: Option<Weight>, // [q_width]
    pub k_norm_b: Option<Weight>,    // [kv_width]
    pub attn_post_norm: Option<Weight>, // [n_embd]
    /// `attn_sinks`: one logit per query head (gpt-oss)
    pub attn_sinks: Option<Weight>, // [n_head]
    pub ffn_norm: Option<Weight>,    // [n_embd]
    pub ffn_norm_b: Option<Weight>,  // [n_embd]
    pub ffn: FfnWeights,
    pub ffn_post_norm: Option<Weight>, // [n_embd]
    /// An encoder's LayerNorms after each residual add
    /// (`attn_output_norm`, `layer_output_norm`; `arch::Encoder`).
    pub attn_out_norm: Option<Weight>, // [n_embd]
    pub attn_out_norm_b: Option<Weight>, // [n_embd]
    pub layer_out_norm: Option<Weight>, // [n_embd]
    pub layer_out_norm_b: Option<Weight>, // [n_embd]
}

/// A block's feed-forward: one FFN, or a mixture of experts.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per layer; the dense one read in place
pub enum FfnWeights {
    Dense(DenseFfn),
    Experts(Box<ExpertFfn>),
}

/// `ffn_gate`, `ffn_up`, `ffn_down` and their biases (or, in a mixture of
/// experts, the shared expert's `ffn_*_shexp`).
#[derive(Debug, Clone)]
pub struct DenseFfn {
    /// None where `up` holds the gate too (`GateUp::Fused`) or the FFN is
    /// not gated (`Ffn::Gelu`).
    pub gate: Option<Weight>, // [n_embd, n_ff]
    pub up: Weight,             // [n_embd, n_ff], or [n_embd, 2 * n_ff] (fused)
    pub down: Weight,           // [n_ff, n_embd]
    pub gate_b: Option<Weight>, // [n_ff]
    pub up_b: Option<Weight>,   // [n_ff]
    pub down_b: Option<Weight>, // [n_embd]
}

/// A mixture-of-experts feed-forward: the router, every expert's FFN as
/// one 3-D tensor (expert e's matrix is its e-th `[cols, rows]` slice),
/// and a shared expert where the family has one.
#[derive(Debug, Clone)]
pub struct ExpertFfn {
    /// `ffn_gate_inp`: one logit per expert
    pub router: Weight, // [n_embd, n_expert]
    pub gate: Weight, // [n_embd, n_ff_exp, n_expert]
    pub up: Weight,   // [n_embd, n_ff_exp, n_expert]
    pub down: Weight, // [n_ff_exp, n_embd, n_expert]
    /// `ffn_gate_shexp`, `ffn_up_shexp`, `ffn_down_shexp`
    pub shared: Option<DenseFfn>,
    /// `ffn_gate_inp_shexp`: the shared expert's output is scaled by
    /// sigmoid(this · x) (qwen2moe)
    pub shared_gate: Option<Weight>, // [n_embd]
    /// The router's and the experts' biases (gpt-oss), expert e's in row e
    pub router_b: Option<Weight>, // [n_expert]
    pub gate_b: Option<Weight>, // [n_ff_exp, n_expert]
    pub up_b: Option<Weight>,   // [n_ff_exp, n_expert]
    pub down_b: Option<Weight>, // [n_embd, n_expert]
    /// `exp_probs_b`: added to the probabilities to choose the experts
    /// (dots1)
    pub probs_b: Option<Weight>, // [n_expert]
}

impl ExpertFfn {
    /// The number of experts.
    pub fn n_expert(&self) -> usize {
        self.router.rows()
    }

    /// The expert matrices (3-D), for the load-time type checks.
    pub fn expert_matrices(&self) -> [&Weight; 3] {
        [&self.gate, &self.up, &self.down]
    }

    /// Every expert's matrix of each expert tensor, as 2-D weights (the
    /// tensor's slices: the load lays them out as it lays out matrices).
    pub fn slices(&self) -> Vec<Weight> {
        self.expert_matrices().into_iter().flat_map(|w| (0..self.n_expert()).map(move |e| w.expert(e))).collect()
    }
}

impl Weight {
    /// Expert `e`'s matrix of a 3-D expert tensor ([cols, rows, n_expert]):
    /// the tensor's `e`-th slice, as a 2-D weight.
    pub fn expert(&self, e: usize) -> Weight {
        let n = self.info.ne[2].max(1) as u64;
        let bytes = self.info.nbytes / n;
        let mut info = self.info.clone();
        info.ne = [info.ne[0], info.ne[1], 1, 1];
        info.n_dims = 2;
        info.offset += e as u64 * bytes;
        info.nbytes = bytes;
        Weight { file: self.file, info }
    }
}

impl LayerWeights {
    /// The 2-D matrices the block multiplies by (an expert layer's 3-D
    /// expert tensors are not among them: `ExpertFfn::expert_matrices`).
    pub fn matrices(&self) -> Vec<&Weight> {
        let mut m = match &self.qkv {
            Qkv::Split { wq, wk, wv } => vec![wq, wk, wv],
            Qkv::Fused { w, .. } => vec![w],
        };
        m.push(&self.wo);
        let dense = match &self.ffn {
            FfnWeights::Dense(f) => Some(f),
            FfnWeights::Experts(e) => {
                m.push(&e.router);
                m.extend(&e.shared_gate);
                e.shared.as_ref()
            }
        };
        if let Some(f) = dense {
            m.extend(&f.gate);
            m.extend([&f.up, &f.down]);
        }
        m
    }
}

/// The attention's input projections.
#[derive(Debug, Clone)]
pub enum Qkv {
    /// `attn_q`, `attn_k`, `attn_v`.
    Split { wq: Weight, wk: Weight, wv: Weight },
    /// `attn_qkv` [n_embd, q_width + 2 * kv_width]: each output row is q,
    /// then k, then v; and its bias, if fused too ([q_width + 2 * kv_width]).
    Fused { w: Weight, b: Option<Weight> },
}

#[derive(Debug, Clone)]
pub struct Weights {
    pub tok_embd: Weight, // [n_embd, n_vocab]
    /// The final norm; an encoder has none.
    pub output_norm: Option<Weight>, // [n_embd]
    pub output_norm_b: Option<Weight>, // [n_embd]
    /// Learned position embeddings (gpt2).
    pub pos_embd: Option<Weight>, // [n_embd, n_ctx_train]
    /// The output head; the token embedding itself when the model ties
    /// them; an encoder has none.
    pub output: Option<Weight>, // [n_embd, n_vocab]
    pub output_b: Option<Weight>, // [n_vocab]
    /// llama3-style rope frequency factors, if present.
    pub rope_freqs: Option<Weight>, // [n_rot / 2]
    /// LongRoPE's factors for contexts past the original one, and within it.
    pub rope_long: Option<Weight>, // [n_rot / 2]
    pub rope_short: Option<Weight>, // [n_rot / 2]
    pub layers: Vec<LayerWeights>,
    /// The projections' `*.scale` tensors, by the projection's name: one
    /// value ([1]), or one per expert ([n_expert]), multiplying its
    /// product (the reference's `w_s`: NVFP4 files carry them). Their
    /// `*.input_scale` tensors are bound and unused, as there. Where the
    /// reference applies them differs: attention's inside `build_lora_mm`
    /// (before the LoRA updates and the bias), the dense FFN's after its
    /// bias (`build_ffn`), the experts' per routed row before the biases.
    pub scales: Scales,
    /// What an encoder has around its blocks (`arch::Encoder`).
    pub encoder: Option<EncoderWeights>,
    /// A decoder's RANK head (`arch::Block::rank_head`: qwen3's rerankers).
    pub rank_out: Option<Weight>, // [n_embd, n_cls_out]
}

/// An encoder's input norm, token types and classifier head.
#[derive(Debug, Clone)]
pub struct EncoderWeights {
    /// `token_types`: row 0 is added to every input row.
    pub type_embd: Option<Weight>, // [n_embd, n_token_types]
    /// `token_embd_norm`: the LayerNorm of the input rows.
    pub tok_norm: Option<Weight>, // [n_embd]
    pub tok_norm_b: Option<Weight>, // [n_embd]
    /// RANK pooling's head: `tanh(cls · x + cls_b)`, then
    /// `cls_out · · + cls_out_b` (each part where the file has it).
    pub cls: Option<Weight>, // [n_embd, n_embd]
    pub cls_b: Option<Weight>,      // [n_embd]
    pub cls_out: Option<Weight>,    // [n_embd, n_cls_out]
    pub cls_out_b: Option<Weight>,  // [n_cls_out]
    /// modern-bert's LayerNorm (no bias) after its head's GELU.
    pub cls_norm: Option<Weight>, // [n_embd]
    /// gemma-embedding's dense modules after the pooling.
    pub dense_2: Option<Weight>, // [n_embd, dense_2_feat_out]
    pub dense_3: Option<Weight>,    // [dense_3_feat_in, n_embd]
}

/// The `*.scale` tensors by where the forward pass applies them.
#[derive(Debug, Clone, Default)]
pub struct Scales {
    /// q, k, v (or the fused qkv), attn_output
    pub attn: std::collections::HashMap<String, Weight>, // [1]
    /// ffn_gate, ffn_up, ffn_down
    pub ffn: std::collections::HashMap<String, Weight>, // [1]
    /// ffn_{gate,up,down}_exps
    pub experts: std::collections::HashMap<String, Weight>, // [n_expert]
}

/// The families whose graphs were checked for where the reference applies
/// the projections' `.scale` tensors (llama_model_init_from_user creates
/// them all: ffi-tests/parity/from_user.c).
const SCALES_CHECKED: &[&str] = &[
    "llama",
    "qwen2",
    "qwen3",
    "gemma3",
    "smollm3",
    "olmo2",
    "gemma2",
    "gemma",
    "granite",
    "mistral3",
    "cohere2",
    "exaone4",
    "starcoder2",
    "phi3",
    "phi2",
    "stablelm",
    "gpt2",
    "falcon",
    "qwen2moe",
    "qwen3moe",
    "olmoe",
    "granitemoe",
    "gpt-oss",
    "dots1",
    "bert",
    "nomic-bert",
    "jina-bert-v2",
    "neo-bert",
    "modern-bert",
    "gemma-embedding",
];

/// Finds tensors by name across the files, checks their shapes, and
/// records which it bound.
struct Binder<'a> {
    files: &'a [GgufFile],
    used: std::cell::RefCell<std::collections::HashSet<String>>,
}

impl Binder<'_> {
    fn find(&self, name: &str) -> Option<Weight> {
        let w = self.files.iter().enumerate().find_map(|(file, f)| Some(Weight { file, info: f.find_tensor(name)? }));
        if w.is_some() {
            self.used.borrow_mut().insert(name.to_string());
        }
        w
    }

    /// Fails on a tensor of the files that nothing bound: the reference
    /// counts the tensors its family created against the file's and
    /// refuses the model when they differ ("wrong number of tensors"), so a
    /// tensor minfer would ignore (a bias, a norm of another layout) is an
    /// error rather than a silently different model.
    fn check_all_used(&self, family: &str) -> Result<()> {
        let used = self.used.borrow();
        let n_file: usize = self.files.iter().map(GgufFile::n_tensors).sum();
        for name in self.files.iter().flat_map(|f| f.tensors().map(|t| t.name)) {
            if !used.contains(&name) {
                return Err(Error::model(format!(
                    "wrong number of tensors; expected {n_file}, got {}: tensor '{name}' is not one the {family} family uses",
                    used.len()
                )));
            }
        }
        Ok(())
    }

    /// A tensor of exactly `shape` (ne order, trailing 1s implied).
    fn optional(&self, name: &str, shape: &[usize]) -> Result<Option<Weight>> {
        let Some(w) = self.find(name) else { return Ok(None) };
        let mut want = [1i64; 4];
        for (d, &n) in shape.iter().enumerate() {
            want[d] = n as i64;
        }
        if w.info.ne != want {
            return Err(Error::model(format!(
                "tensor '{name}' has the wrong shape: {:?}, expected {:?}",
                &w.info.ne[..],
                &want[..shape.len().max(1)]
            )));
        }
        Ok(Some(w))
    }

    fn required(&self, name: &str, shape: &[usize]) -> Result<Weight> {
        self.optional(name, shape)?.ok_or_else(|| Error::model(format!("missing tensor '{name}'")))
    }
}

/// The tensors of layer `il`'s mixture of experts (the reference's
/// `ffn_gate_inp`, `ffn_{gate,up,down}_exps` and, per the family's recipe,
/// the shared expert `ffn_*_shexp`).
fn bind_experts(b: &Binder, moe: Moe, hp: &HParams, il: usize) -> Result<ExpertFfn> {
    let t = |s: &str| format!("blk.{il}.{s}");
    let n_embd = hp.n_embd as usize;
    let n_expert = hp.n_expert as usize;
    let n_ff_exp = hp.n_ff_exp[il] as usize;
    let shared = match moe.shared {
        SharedExpert::None => None,
        SharedExpert::Plain if hp.n_ff_shexp == 0 => None,
        SharedExpert::Plain | SharedExpert::SigmoidGated => {
            let n = hp.n_ff_shexp as usize;
            Some(DenseFfn {
                gate: Some(b.required(&t("ffn_gate_shexp.weight"), &[n_embd, n])?),
                up: b.required(&t("ffn_up_shexp.weight"), &[n_embd, n])?,
                down: b.required(&t("ffn_down_shexp.weight"), &[n, n_embd])?,
                gate_b: None,
                up_b: None,
                down_b: None,
            })
        }
    };
    let shared_gate = match moe.shared {
        SharedExpert::SigmoidGated => Some(b.required(&t("ffn_gate_inp_shexp.weight"), &[n_embd])?),
        _ => None,
    };
    let bias = |name: &str, shape: &[usize]| match moe.biases {
        true => b.required(&t(name), shape).map(Some),
        false => Ok(None),
    };
    // (a fused `ffn_gate_up_exps` is not read: none of these families
    // creates it in the reference, whose loader then misses the gate)
    Ok(ExpertFfn {
        router: b.required(&t("ffn_gate_inp.weight"), &[n_embd, n_expert])?,
        gate: b.required(&t("ffn_gate_exps.weight"), &[n_embd, n_ff_exp, n_expert])?,
        up: b.required(&t("ffn_up_exps.weight"), &[n_embd, n_ff_exp, n_expert])?,
        down: b.required(&t("ffn_down_exps.weight"), &[n_ff_exp, n_embd, n_expert])?,
        shared,
        shared_gate,
        router_b: bias("ffn_gate_inp.bias", &[n_expert])?,
        gate_b: bias("ffn_gate_exps.bias", &[n_ff_exp, n_expert])?,
        up_b: bias("ffn_up_exps.bias", &[n_ff_exp, n_expert])?,
        down_b: bias("ffn_down_exps.bias", &[n_embd, n_expert])?,
        probs_b: match moe.selection_bias {
            true => b.optional(&t("exp_probs_b.bias"), &[n_expert])?,
            false => None,
        },
    })
}

/// jina-bert-v2's FFN, of the kind its tensors say (`arch::Encoder::
/// ffn_from_file`): `ffn_gate` optional, `ffn_up` of n_ff or 2·n_ff rows
/// (the gate and up halves of a GEGLU), its bias as wide, `ffn_down.bias`
/// required.
fn ffn_from_file(b: &Binder, n_embd: usize, n_ff: usize, il: usize) -> Result<DenseFfn> {
    let t = |s: &str| format!("blk.{il}.{s}");
    let up_rows = b.find(&t("ffn_up.weight")).map_or(n_ff, |w| w.rows());
    if up_rows != n_ff && up_rows != 2 * n_ff {
        // (the reference asserts it, aborting)
        return Err(Error::model(format!(
            "tensor '{}' has {up_rows} rows: the FFN takes n_ff ({n_ff}) or twice that",
            t("ffn_up.weight")
        )));
    }
    Ok(DenseFfn {
        gate: b.optional(&t("ffn_gate.weight"), &[n_embd, n_ff])?,
        up: b.required(&t("ffn_up.weight"), &[n_embd, up_rows])?,
        down: b.required(&t("ffn_down.weight"), &[n_ff, n_embd])?,
        gate_b: None,
        up_b: b.optional(&t("ffn_up.bias"), &[up_rows])?,
        down_b: Some(b.required(&t("ffn_down.bias"), &[n_embd])?),
    })
}

impl Weights {
    pub fn bind(family: &Family, hp: &HParams, files: &[GgufFile]) -> Result<Weights> {
        let b = Binder { files, used: Default::default() };
        let recipe = &family.block;
        let n_embd = hp.n_embd as usize;
        let n_vocab = hp.n_vocab as usize;
        // a tensor the recipe may ask for
        let bind = |need: Need, name: &str, shape: &[usize]| -> Result<Option<Weight>> {
            match need {
                Need::Absent => Ok(None),
                Need::Optional => b.optional(name, shape),
                Need::Required => b.required(name, shape).map(Some),
            }
        };
        let need = |present: bool| if present { Need::Required } else { Need::Absent };
        let tok_embd = b.required("token_embd.weight", &[n_embd, n_vocab])?;
        // an encoder: bert-style (its norms after the residual adds, no
        // final norm), or pre-norm (a decoder's blocks and final norm)
        let encoder = recipe.encoder.is_some();
        let post_enc = recipe.encoder.is_some_and(|e| !e.pre_norm);
        let ffn_bias_unused = recipe.encoder.is_some_and(|e| e.ffn_bias_unused);
        let norm_name = recipe.encoder.map_or("output_norm", |e| e.output_norm);
        let output_norm = bind(need(!post_enc), &format!("{norm_name}.weight"), &[n_embd])?;
        let output_norm_b =
            bind(if post_enc { Need::Absent } else { recipe.norm_bias }, &format!("{norm_name}.bias"), &[n_embd])?;
        let pos_embd = bind(need(recipe.pos_embd), "position_embd.weight", &[n_embd, hp.n_ctx_train as usize])?;
        let output = match (encoder, recipe.tied_output) {
            // (gemma-embedding's loader takes an output head it never
            // multiplies by: bound, unused)
            (true, false) => {
                b.optional("output.weight", &[n_embd, n_vocab])?;
                None
            }
            (true, true) => None,
            (false, true) => Some(tok_embd.clone()),
            (false, false) => {
                Some(b.optional("output.weight", &[n_embd, n_vocab])?.unwrap_or_else(|| tok_embd.clone()))
            }
        };
        let output_b = bind(if encoder { Need::Absent } else { recipe.output_bias }, "output.bias", &[n_vocab])?;
        let rank_out = match recipe.rank_head {
            true => b.optional("cls.output.weight", &[n_embd, hp.n_cls_out as usize])?,
            false => None,
        };
        let encoder_weights = match encoder {
            false => None,
            true => {
                let n_cls_out = hp.n_cls_out as usize;
                let enc = recipe.encoder.expect("an encoder");
                let (cls_rows, out) = match enc.cls_head {
                    ClsHead::None => (0, false),
                    ClsHead::Full | ClsHead::Modern => (n_embd, true),
                    ClsHead::Score => (1, false),
                };
                let modern = enc.cls_head == ClsHead::Modern;
                let opt = |on: bool, name: &str, shape: &[usize]| if on { b.optional(name, shape) } else { Ok(None) };
                Some(EncoderWeights {
                    type_embd: bind(enc.token_types, "token_types.weight", &[n_embd, hp.n_token_types as usize])?,
                    tok_norm: bind(enc.tok_norm, "token_embd_norm.weight", &[n_embd])?,
                    tok_norm_b: bind(
                        if enc.tok_norm == Need::Absent { Need::Absent } else { recipe.norm_bias },
                        "token_embd_norm.bias",
                        &[n_embd],
                    )?,
                    cls: opt(cls_rows > 0, "cls.weight", &[n_embd, cls_rows])?,
                    cls_b: opt(cls_rows > 0 && !modern, "cls.bias", &[cls_rows])?,
                    cls_norm: opt(modern, "cls.norm.weight", &[n_embd])?,
                    dense_2: opt(enc.dense_out, "dense_2.weight", &[n_embd, hp.dense_2_feat_out as usize])?,
                    dense_3: opt(enc.dense_out, "dense_3.weight", &[hp.dense_3_feat_in as usize, n_embd])?,
                    cls_out: opt(out, "cls.output.weight", &[n_embd, n_cls_out])?,
                    cls_out_b: opt(out, "cls.output.bias", &[n_cls_out])?,
                })
            }
        };
        let rope_freqs = b.optional("rope_freqs.weight", &[hp.n_rot as usize / 2])?;
        let rope_long = b.optional("rope_factors_long.weight", &[hp.n_rot as usize / 2])?;
        let rope_short = b.optional("rope_factors_short.weight", &[hp.n_rot as usize / 2])?;

        let mut layers = Vec::with_capacity(hp.n_layer as usize);
        for il in 0..hp.n_layer as usize {
            let n_head = hp.n_head[il] as usize;
            let n_head_kv = hp.n_head_kv[il] as usize;
            let hd_k = hp.n_embd_head_k as usize;
            let hd_v = hp.n_embd_head_v as usize;
            let (q_width, k_width, v_width) = (n_head * hd_k, n_head_kv * hd_k, n_head_kv * hd_v);
            let n_ff = hp.n_ff[il] as usize;
            let t = |s: &str| format!("blk.{il}.{s}");
            // (every family takes q, k and v fused when the file has them so,
            // as the reference's create_tensor_qkv: with a fused bias, or
            // the three separate ones)
            let qkv_width = q_width + k_width + v_width;
            let qkv = match b.optional(&t("attn_qkv.weight"), &[n_embd, qkv_width])? {
                Some(w) => Qkv::Fused { w, b: bind(recipe.qkv_bias, &t("attn_qkv.bias"), &[qkv_width])? },
                None => Qkv::Split {
                    wq: b.required(&t("attn_q.weight"), &[n_embd, q_width])?,
                    wk: b.required(&t("attn_k.weight"), &[n_embd, k_width])?,
                    wv: b.required(&t("attn_v.weight"), &[n_embd, v_width])?,
                },
            };
            let fused_bias = matches!(qkv, Qkv::Fused { b: Some(_), .. });
            let qkv_bias = if fused_bias { Need::Absent } else { recipe.qkv_bias };
            // (an encoder's: LayerNorms of the whole rows, with biases, each
            // where the file has it; jina-bert-v2 sizes both n_embd)
            let enc_qk = recipe.encoder.is_some_and(|e| e.qk_norm);
            let enc_norm = |name: &str| if enc_qk { b.optional(&t(name), &[n_embd]) } else { Ok(None) };
            let (q_norm_b, k_norm_b) = (enc_norm("attn_q_norm.bias")?, enc_norm("attn_k_norm.bias")?);
            let (q_norm, k_norm) = match recipe.qk_norm {
                _ if enc_qk => (enc_norm("attn_q_norm.weight")?, enc_norm("attn_k_norm.weight")?),
                QkNorm::None => (None, None),
                QkNorm::PerHead => (
                    Some(b.required(&t("attn_q_norm.weight"), &[hd_k])?),
                    Some(b.required(&t("attn_k_norm.weight"), &[hd_k])?),
                ),
                QkNorm::Whole => (
                    Some(b.required(&t("attn_q_norm.weight"), &[q_width])?),
                    Some(b.required(&t("attn_k_norm.weight"), &[k_width])?),
                ),
                QkNorm::LayerPerHead => (
                    b.optional(&t("attn_q_norm.weight"), &[hd_k, n_head])?,
                    b.optional(&t("attn_k_norm.weight"), &[hd_k, n_head_kv])?,
                ),
            };
            let pre_norm_bias = if recipe.pre_norms { recipe.norm_bias } else { Need::Absent };
            let ffn_norm = match need(recipe.pre_norms && recipe.parallel == Parallel::No) {
                Need::Required if recipe.ffn_norm_optional => Need::Optional,
                n => n,
            };
            let attn_norm_2 = match recipe.attn_norm_2 {
                true => b.optional(&t("attn_norm_2.weight"), &[n_embd])?,
                false => None,
            };
            let gated = recipe.ffn != Ffn::Gelu;
            let gate_width = match recipe.gate_up {
                GateUp::Split => n_ff,
                GateUp::Fused => 2 * n_ff,
            };
            // (modern-bert: layer 0 may have none)
            let attn_norm_need = match need(recipe.pre_norms) {
                Need::Required if il == 0 && recipe.encoder.is_some_and(|e| e.first_attn_norm_optional) => {
                    Need::Optional
                }
                n => n,
            };
            let mut layer = LayerWeights {
                attn_norm: bind(attn_norm_need, &t("attn_norm.weight"), &[n_embd])?,
                attn_norm_b: bind(pre_norm_bias, &t("attn_norm.bias"), &[n_embd])?,
                attn_norm_2: attn_norm_2.clone(),
                attn_norm_2_b: match attn_norm_2 {
                    Some(_) if post_enc => b.optional(&t("attn_norm_2.bias"), &[n_embd])?,
                    Some(_) => bind(recipe.norm_bias, &t("attn_norm_2.bias"), &[n_embd])?,
                    None => None,
                },
                qkv,
                wo: b.required(&t("attn_output.weight"), &[n_head * hd_v, n_embd])?,
                bq: bind(qkv_bias, &t("attn_q.bias"), &[q_width])?,
                bk: bind(qkv_bias, &t("attn_k.bias"), &[k_width])?,
                bv: bind(qkv_bias, &t("attn_v.bias"), &[v_width])?,
                bo: bind(recipe.proj_bias, &t("attn_output.bias"), &[n_embd])?,
                q_norm,
                k_norm,
                q_norm_b,
                k_norm_b,
                attn_post_norm: bind(need(recipe.post_norms), &t("post_attention_norm.weight"), &[n_embd])?,
                attn_sinks: bind(need(recipe.attn_sinks), &t("attn_sinks.weight"), &[n_head])?,
                ffn_norm: bind(ffn_norm, &t(&format!("{}.weight", recipe.ffn_norm_tensor)), &[n_embd])?,
                // (the bias only with the norm: StableLM 2 12B has neither)
                ffn_norm_b: match (ffn_norm, pre_norm_bias) {
                    (Need::Absent, _) | (_, Need::Absent) => None,
                    (Need::Optional, _) => b.optional(&t("ffn_norm.bias"), &[n_embd])?,
                    (Need::Required, need) => bind(need, &t("ffn_norm.bias"), &[n_embd])?,
                },
                // (dots1: the first layers dense)
                ffn: match family.block.moe.filter(|_| hp.n_expert > 0 && il >= hp.n_layer_dense_lead as usize) {
                    None if recipe.encoder.is_some_and(|e| e.ffn_from_file) => {
                        FfnWeights::Dense(ffn_from_file(&b, n_embd, n_ff, il)?)
                    }
                    None => FfnWeights::Dense(DenseFfn {
                        gate: bind(
                            need(gated && recipe.gate_up == GateUp::Split),
                            &t("ffn_gate.weight"),
                            &[n_embd, n_ff],
                        )?,
                        up: b.required(&t("ffn_up.weight"), &[n_embd, gate_width])?,
                        down: b.required(&t("ffn_down.weight"), &[n_ff, n_embd])?,
                        gate_b: match recipe.gate_up {
                            GateUp::Split if gated && !ffn_bias_unused => {
                                bind(recipe.proj_bias, &t("ffn_gate.bias"), &[n_ff])?
                            }
                            _ => None,
                        },
                        // (nomic-bert: read, not used)
                        up_b: bind(recipe.proj_bias, &t("ffn_up.bias"), &[n_ff])?.filter(|_| !ffn_bias_unused),
                        down_b: bind(recipe.proj_bias, &t("ffn_down.bias"), &[n_embd])?.filter(|_| !ffn_bias_unused),
                    }),
                    Some(moe) => FfnWeights::Experts(Box::new(bind_experts(&b, moe, hp, il)?)),
                },
                ffn_post_norm: bind(need(recipe.post_norms), &t("post_ffw_norm.weight"), &[n_embd])?,
                attn_out_norm: bind(need(post_enc), &t("attn_output_norm.weight"), &[n_embd])?,
                attn_out_norm_b: bind(need(post_enc), &t("attn_output_norm.bias"), &[n_embd])?,
                layer_out_norm: bind(need(post_enc), &t("layer_output_norm.weight"), &[n_embd])?,
                layer_out_norm_b: bind(need(post_enc), &t("layer_output_norm.bias"), &[n_embd])?,
            };
            if matches!(layer.qkv, Qkv::Fused { .. })
                && (layer.bq.is_none() || layer.bk.is_none() || layer.bv.is_none())
            {
                // (the reference adds separate biases to a fused output only
                // when all three are there)
                (layer.bq, layer.bk, layer.bv) = (None, None, None);
            }
            layers.push(layer);
        }
        // the per-projection scales, as the reference's generic pass after
        // the family's tensors
        let mut scales = Scales::default();
        for l in &layers {
            let attn: Vec<&Weight> = match &l.qkv {
                Qkv::Split { wq, wk, wv } => vec![wq, wk, wv, &l.wo],
                Qkv::Fused { w, .. } => vec![w, &l.wo],
            };
            let (dense, experts, shared): (Vec<&Weight>, Vec<&Weight>, Vec<&Weight>) = match &l.ffn {
                FfnWeights::Dense(f) => (f.gate.iter().chain([&f.up, &f.down]).collect(), vec![], vec![]),
                FfnWeights::Experts(e) => (
                    vec![],
                    e.expert_matrices().to_vec(),
                    e.shared.iter().flat_map(|f| f.gate.iter().chain([&f.up, &f.down])).collect(),
                ),
            };
            let n_expert = hp.n_expert as usize;
            let groups = [(attn, 1, 0), (dense, 1, 1), (experts, n_expert, 2), (shared, 1, 3)];
            for (mats, n, kind) in groups {
                for w in mats {
                    let stem = w.info.name.strip_suffix(".weight").unwrap_or(&w.info.name);
                    b.optional(&format!("{stem}.input_scale"), &[n])?;
                    let Some(s) = b.optional(&format!("{stem}.scale"), &[n])? else { continue };
                    // (the families minfer runs all scale their attention as
                    // the reference's build_qkv and build_attn do; the
                    // dense FFN's scales are used by llama's, qwen3's,
                    // mistral3's and cohere2's graphs, the experts' by
                    // llama's, mistral3's and qwen3moe's, the shared
                    // experts' by none;
                    // the others are loaded unused, as there, by the
                    // families whose graphs were checked)
                    let map = match kind {
                        0 => &mut scales.attn,
                        1 if matches!(family.name, "llama" | "qwen3" | "mistral3" | "cohere2") => &mut scales.ffn,
                        2 if matches!(family.name, "llama" | "mistral3" | "qwen3moe") => &mut scales.experts,
                        _ if SCALES_CHECKED.contains(&family.name) => continue,
                        _ => {
                            let what = format!("the per-tensor scale '{stem}.scale' in the {} family", family.name);
                            crate::log_warn!("not implemented yet: {what}");
                            return Err(Error::model(format!("not implemented yet: {what}")));
                        }
                    };
                    map.insert(w.info.name.clone(), s);
                }
            }
        }
        b.check_all_used(family.name)?;
        let w = Weights {
            scales,
            encoder: encoder_weights,
            rank_out,
            tok_embd,
            output_norm,
            output_norm_b,
            pos_embd,
            output,
            output_b,
            rope_freqs,
            rope_long,
            rope_short,
            layers,
        };
        w.check_types()?;
        Ok(w)
    }

    /// Refuses, at load, a weight whose block type minfer cannot run (the
    /// reference reads TQ2_0, MXFP4, the IQ1–IQ3 types, ...): else the model
    /// would load and every decode fail.
    fn check_types(&self) -> Result<()> {
        let unsupported = |w: &Weight, why: String| {
            Error::model(format!(
                "tensor '{}' has type {}: not implemented yet: {} weights ({why})",
                w.info.name,
                w.ty(),
                w.ty()
            ))
        };
        let experts = self.layers.iter().flat_map(|l| match &l.ffn {
            FfnWeights::Experts(e) => e.expert_matrices().to_vec(),
            FfnWeights::Dense(_) => Vec::new(),
        });
        let heads =
            self.encoder.iter().flat_map(|e| [&e.cls, &e.cls_out, &e.dense_2, &e.dense_3].into_iter().flatten());
        let matrices =
            self.layers.iter().flat_map(LayerWeights::matrices).chain(self.output.as_ref()).chain(heads).chain(experts);
        for w in matrices {
            crate::kernels::check_type(w.ty(), w.cols()).map_err(|e| unsupported(w, e.to_string()))?;
        }
        // rows read one at a time (get_rows), and the one-row weights read at load
        let type_embd = self.encoder.as_ref().and_then(|e| e.type_embd.as_ref());
        for w in [Some(&self.tok_embd), self.pos_embd.as_ref(), type_embd].into_iter().flatten().chain(self.vectors()) {
            if !crate::quant::is_supported(w.ty()) {
                return Err(unsupported(w, "no dequantization".into()));
            }
        }
        Ok(())
    }

    /// The rope factors (the reference's get_rope_factors): llama3's when
    /// the model has them, else LongRoPE's long or short ones.
    pub fn rope_factors(&self, long: bool) -> Option<&Weight> {
        self.rope_freqs.as_ref().or(if long { self.rope_long.as_ref() } else { self.rope_short.as_ref() })
    }

    /// The one-row weights the forward pass reads (norms, biases, rope
    /// factors), each once.
    pub fn vectors(&self) -> Vec<&Weight> {
        let mut v: Vec<&Weight> = Vec::new();
        v.extend(
            [
                &self.output_norm,
                &self.rope_freqs,
                &self.rope_long,
                &self.rope_short,
                &self.output_b,
                &self.output_norm_b,
            ]
            .into_iter()
            .flatten(),
        );
        if let Some(e) = &self.encoder {
            v.extend([&e.tok_norm, &e.tok_norm_b, &e.cls_b, &e.cls_out_b, &e.cls_norm].into_iter().flatten());
        }
        for l in &self.layers {
            v.extend(
                [
                    &l.attn_norm,
                    &l.attn_norm_b,
                    &l.attn_norm_2,
                    &l.attn_norm_2_b,
                    &l.ffn_norm,
                    &l.ffn_norm_b,
                    &l.bq,
                    match &l.qkv {
                        Qkv::Fused { b, .. } => b,
                        Qkv::Split { .. } => &None,
                    },
                    &l.bk,
                    &l.bv,
                    &l.bo,
                    &l.q_norm,
                    &l.k_norm,
                    &l.q_norm_b,
                    &l.k_norm_b,
                    &l.attn_post_norm,
                    &l.ffn_post_norm,
                    &l.attn_sinks,
                    &l.attn_out_norm,
                    &l.attn_out_norm_b,
                    &l.layer_out_norm,
                    &l.layer_out_norm_b,
                ]
                .into_iter()
                .flatten(),
            );
            let dense = match &l.ffn {
                FfnWeights::Dense(f) => Some(f),
                FfnWeights::Experts(e) => {
                    v.extend([&e.router_b, &e.gate_b, &e.up_b, &e.down_b, &e.probs_b].into_iter().flatten());
                    e.shared.as_ref()
                }
            };
            if let Some(f) = dense {
                v.extend([&f.gate_b, &f.up_b, &f.down_b].into_iter().flatten());
            }
        }
        v.extend(self.scales.attn.values().chain(self.scales.ffn.values()).chain(self.scales.experts.values()));
        v
    }
}
