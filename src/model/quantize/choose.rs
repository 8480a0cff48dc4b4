//! Which type each tensor gets: the reference's tensor categories,
//! `tensor_allows_quantization`, `llama_tensor_get_type(_impl)` with its
//! per-layer bumps, and `tensor_type_fallback` for rows the chosen block
//! size does not divide (src/llama-quant.cpp of the pinned reference).

use super::QuantizeParams;
use crate::error::{Error, Result};
use crate::ggml_type::{GgmlType, GGML_TYPE_COUNT};
use crate::gguf::TensorInfo;
use crate::model::ftype as ft;
use crate::regex::bytes::Regex;

/// Broad tensor roles (the reference's `tensor_category`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    TokenEmbd,
    AttentionQ,
    AttentionV,
    AttentionK,
    AttentionQkv,
    AttentionKvB,
    AttentionOutput,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other,
}

pub fn is_token_embd(name: &str) -> bool {
    name == "token_embd.weight" || name == "per_layer_token_embd.weight"
}

pub fn category(name: &str) -> Category {
    use Category::*;
    if name == "output.weight" {
        return Output;
    }
    if is_token_embd(name) {
        return TokenEmbd;
    }
    let table = [
        ("attn_qkv.weight", AttentionQkv),
        ("attn_kv_b.weight", AttentionKvB),
        ("attn_v.weight", AttentionV),
        ("attn_k.weight", AttentionK),
        ("attn_q.weight", AttentionQ),
        ("attn_output.weight", AttentionOutput),
        ("ffn_up", FfnUp),
        ("ffn_gate", FfnGate),
        ("ffn_down", FfnDown),
    ];
    table.iter().find(|(s, _)| name.contains(s)).map_or(Other, |&(_, c)| c)
}

/// attention-v-like tensors, more sensitive to quantization.
fn is_attn_v(c: Category) -> bool {
    matches!(c, Category::AttentionV | Category::AttentionQkv | Category::AttentionKvB)
}

/// Substrings that keep a tensor in its type whatever the file type.
const NEVER_QUANTIZED: &[&str] = &[
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",
    "a.rvq.codebook",
    "mm.a.code_embd",
];

/// More of them, for glm5-next only.
const NEVER_QUANTIZED_GLM5_NEXT: &[&str] = &[
    "hc_",
    "indexer.attn_q_b",
    "indexer.attn_k",
    "indexer.proj",
    "indexer_compressor_gate",
    "indexer_compressor_ape",
    "ssm_f_a.weight",
    "ssm_f_b.weight",
    "ssm_g_a.weight",
    "ssm_g_b.weight",
    "ssm_beta.weight",
    "attn_kv_a_mqa.weight",
    "attn_k_b.weight",
    "attn_v_b.weight",
];

/// `tensor_allows_quantization`.
pub fn allows_quantization(p: &QuantizeParams, arch: &str, name: &str, t: &TensorInfo) -> bool {
    if p.only_copy || t.ggml_n_dims() < 2 {
        return false;
    }
    // `name.rfind("weight") == name.size() - 6`: also true for any 5-byte
    // name, where both sides are npos.
    let mut q = name.ends_with("weight") || name.len() == 5;
    q &= !NEVER_QUANTIZED.iter().any(|s| name.contains(s));
    q &= p.quantize_output_tensor || name != "output.weight";
    q &= name != "position_embd.weight" && name != "token_types.weight";
    if arch == "glm5-next" {
        q &= !NEVER_QUANTIZED_GLM5_NEXT.iter().any(|s| name.contains(s));
    }
    q
}

/// `llama_ftype_get_default_type`; None for values that are not a file type.
pub fn default_type(ftype: i32) -> Option<GgmlType> {
    use GgmlType::*;
    Some(match ftype {
        ft::Q4_0 => Q4_0,
        ft::Q4_1 => Q4_1,
        ft::Q5_0 => Q5_0,
        ft::Q5_1 => Q5_1,
        ft::Q8_0 => Q8_0,
        ft::F16 => F16,
        ft::BF16 => BF16,
        ft::ALL_F32 => F32,
        ft::Q1_0 => Q1_0,
        ft::Q2_0 => Q2_0,
        ft::MXFP4_MOE => MXFP4,
        ft::Q2_K_S | ft::Q2_K => Q2_K,
        ft::IQ3_XS => IQ3_S,
        ft::Q3_K_S | ft::Q3_K_M | ft::Q3_K_L => Q3_K,
        ft::Q4_K_S | ft::Q4_K_M => Q4_K,
        ft::Q5_K_S | ft::Q5_K_M => Q5_K,
        ft::Q6_K => Q6_K,
        ft::TQ1_0 => TQ1_0,
        ft::TQ2_0 => TQ2_0,
        ft::IQ2_XXS => IQ2_XXS,
        ft::IQ2_XS => IQ2_XS,
        ft::IQ2_S => IQ2_XS,
        ft::IQ2_M => IQ2_S,
        ft::IQ3_XXS => IQ3_XXS,
        ft::IQ1_S => IQ1_S,
        ft::IQ1_M => IQ1_M,
        ft::IQ4_NL => IQ4_NL,
        ft::IQ4_XS => IQ4_XS,
        ft::IQ3_S | ft::IQ3_M => IQ3_S,
        _ => return None,
    })
}

/// `tensor_requires_imatrix`.
pub fn requires_imatrix(name: &str, ty: GgmlType, ftype: i32) -> bool {
    use GgmlType::*;
    if is_token_embd(name) || name == "output.weight" {
        return false;
    }
    match ty {
        IQ3_XXS | IQ2_XXS | IQ2_XS | IQ2_S | IQ1_M | IQ1_S => true,
        // k-quants need none, except the Q2_K tensors of a Q2_K_S file
        Q2_K => ftype == ft::Q2_K_S,
        _ => false,
    }
}

/// A user type from the C parameters: None when unset (≥ GGML_TYPE_COUNT,
/// compared as the unsigned enum it is), an error for a removed value.
pub fn user_type(v: u32, what: &str) -> Result<Option<GgmlType>> {
    if v >= GGML_TYPE_COUNT {
        return Ok(None);
    }
    GgmlType::from_u32(v).map(Some).ok_or_else(|| Error::invalid(format!("{what} {v} is not a ggml type")))
}

/// The model facts the type choice reads (the reference's hparams).
#[derive(Debug, Clone, Default)]
pub struct ModelFacts {
    pub arch: String,
    pub n_layer: i32,
    pub n_head: u32,
    pub n_head_kv: u32,
    pub n_expert: u32,
    /// llama/qwen2/deci/olmo with 80 layers (llama: grouped-query) or
    /// jais2 with 68: the reference's LLM_TYPE_70B.
    pub is_70b: bool,
}

impl ModelFacts {
    fn n_gqa(&self) -> u32 {
        self.n_head.checked_div(self.n_head_kv).unwrap_or(0)
    }
}

/// The running state of one type choice over a model's tensors
/// (`quantize_state_impl`): counters of the tensors seen so far.
pub struct Chooser<'a> {
    pub p: &'a QuantizeParams,
    pub m: &'a ModelFacts,
    pub has_imatrix: bool,
    pub has_tied_embeddings: bool,
    pub n_attention_wv: i32,
    pub n_ffn: i32,
    pub i_attention_wv: i32,
    pub i_ffn_down: i32,
    pub i_ffn_gate: i32,
    pub i_ffn_up: i32,
    pub n_fallback: usize,
    pub patterns: Vec<(Regex, GgmlType)>,
}

impl<'a> Chooser<'a> {
    /// `init_quantize_state_counters` over the names of the tensors.
    pub fn new<'n>(
        p: &'a QuantizeParams,
        m: &'a ModelFacts,
        names: impl Iterator<Item = &'n str>,
        has_imatrix: bool,
        patterns: Vec<(Regex, GgmlType)>,
    ) -> Chooser<'a> {
        let mut c = Chooser {
            p,
            m,
            has_imatrix,
            has_tied_embeddings: true,
            n_attention_wv: 0,
            n_ffn: m.n_layer,
            i_attention_wv: 0,
            i_ffn_down: 0,
            i_ffn_gate: 0,
            i_ffn_up: 0,
            n_fallback: 0,
            patterns,
        };
        for name in names {
            let cat = category(name);
            if is_attn_v(cat) {
                c.n_attention_wv += 1;
            }
            if cat == Category::Output {
                c.has_tied_embeddings = false;
            }
        }
        c
    }

    /// `llama_tensor_get_type` for a tensor that allows quantization.
    pub fn get_type(&mut self, name: &str, ne: &[i64; 4], default: GgmlType) -> Result<GgmlType> {
        let cat = category(name);
        let p = self.p;
        let tok_type = user_type(p.token_embedding_type, "token_embedding_type")?;
        let out_type = user_type(p.output_tensor_type, "output_tensor_type")?;
        if let (Some(t), Category::TokenEmbd) = (tok_type, cat) {
            // per_layer_token_embd follows the token embedding type unless a
            // tensor-type pattern names it
            let named = name == "per_layer_token_embd.weight"
                && self.patterns.iter().any(|(re, _)| re.search(name.as_bytes()).is_some());
            if !named {
                return Ok(t);
            }
        }
        if let (Some(t), Category::Output) = (out_type, cat) {
            return Ok(t);
        }
        let mut new_type = default;
        if default.is_quantized() {
            let mut manual = false;
            for (re, ty) in &self.patterns {
                if re.search(name.as_bytes()).is_some() {
                    if *ty != new_type {
                        crate::log_warn!(
                            "llama_tensor_get_type: {name:<36} - applying manual override: {new_type} -> {ty}"
                        );
                        new_type = *ty;
                    }
                    manual = true;
                    break;
                }
            }
            if !manual && !p.pure {
                new_type = self.get_type_impl(new_type, name, ne, cat, out_type)?;
            }
            new_type = self.fallback(name, ne, new_type)?;
        }
        Ok(new_type)
    }

    /// (layer, layer count) of a per-layer tensor: its position among the
    /// tensors of its kind, or with experts its `blk.N.` number.
    fn layer_info(&self, i: i32, name: &str) -> Result<(i32, i32)> {
        let n = self.n_ffn;
        if self.m.n_expert.max(1) > 1 {
            let il = super::blk_number(name)
                .ok_or_else(|| Error::model(format!("Failed to determine layer for tensor {name}")))?;
            if il < 0 || il >= n {
                return Err(Error::model(format!("Bad layer {il} for tensor {name}. Must be in [0, {n})")));
            }
            return Ok((il, n));
        }
        Ok((i, n))
    }

    /// `llama_tensor_get_type_impl`: the mixture of a file type.
    #[allow(clippy::if_same_then_else, reason = "branch for branch as llama_tensor_get_type_impl")]
    fn get_type_impl(
        &mut self,
        mut new_type: GgmlType,
        name: &str,
        ne: &[i64; 4],
        cat: Category,
        out_type: Option<GgmlType>,
    ) -> Result<GgmlType> {
        use Category::*;
        use GgmlType::*;
        let ftype = self.p.ftype;
        let arch = self.m.arch.as_str();
        let falcon = arch == "falcon";
        let n_expert = self.m.n_expert;
        let n_gqa = self.m.n_gqa();
        let use_more_bits = |i: i32, n: i32| -> bool { i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2 };
        let iq_low = [ft::IQ2_XXS, ft::IQ2_XS, ft::IQ1_S, ft::IQ2_S, ft::IQ2_M, ft::IQ1_M].contains(&ftype);
        let iq2_s_m = ftype == ft::IQ2_S || ftype == ft::IQ2_M;

        if arch == "glm5-next"
            && (name.contains("attn_q_a") || name.contains("attn_q_b") || name.contains("nextn.eh_proj"))
            && !matches!(new_type, F32 | BF16 | F16)
        {
            return Ok(Q8_0);
        }

        if cat == Output || (self.has_tied_embeddings && cat == TokenEmbd) {
            if let Some(t) = out_type {
                new_type = t;
            } else {
                let nx = ne[0];
                let qk_k = new_type.block_size() as i64;
                if ftype == ft::MXFP4_MOE || falcon || nx % qk_k != 0 {
                    new_type = Q8_0;
                } else if [ft::IQ2_XXS, ft::IQ2_XS, ft::IQ3_XXS, ft::IQ1_S, ft::IQ2_S, ft::IQ2_M, ft::IQ1_M]
                    .contains(&ftype)
                {
                    new_type = Q5_K;
                } else if new_type != Q8_0 {
                    new_type = Q6_K;
                }
            }
        } else if ftype == ft::MXFP4_MOE {
            let bailing_expert = arch == "bailingmoe3" && matches!(cat, FfnUp | FfnGate | FfnDown);
            new_type = if ne[2] > 1 && (arch != "bailingmoe3" || bailing_expert) { MXFP4 } else { Q8_0 };
        } else if cat == TokenEmbd {
            let tok_type = user_type(self.p.token_embedding_type, "token_embedding_type")?;
            if let Some(t) = tok_type {
                new_type = t;
            } else if [ft::IQ2_XXS, ft::IQ2_XS, ft::IQ1_S, ft::IQ1_M].contains(&ftype) {
                new_type = Q2_K;
            } else if iq2_s_m || ftype == ft::IQ3_XXS {
                new_type = IQ3_S;
            } else if [ft::TQ1_0, ft::TQ2_0, ft::Q2_0].contains(&ftype) {
                new_type = Q4_K;
            }
        } else if iq_low {
            if is_attn_v(cat) {
                new_type = if n_gqa >= 4 || n_expert >= 4 {
                    Q4_K
                } else if iq2_s_m {
                    IQ3_S
                } else {
                    Q2_K
                };
                self.i_attention_wv += 1;
            } else if n_expert == 8 && cat == AttentionK {
                new_type = Q4_K;
            } else if cat == FfnDown {
                if self.i_ffn_down < self.n_ffn / 8 {
                    new_type = if iq2_s_m { IQ3_S } else { Q2_K };
                }
                self.i_ffn_down += 1;
            } else if cat == AttentionOutput {
                if n_expert == 8 {
                    new_type = Q5_K;
                } else if ftype == ft::IQ1_S || ftype == ft::IQ1_M {
                    new_type = IQ2_XXS;
                } else if iq2_s_m {
                    new_type = IQ3_S;
                }
            }
        } else if is_attn_v(cat) {
            let i = self.i_attention_wv;
            if ftype == ft::Q2_K {
                new_type = if n_gqa >= 4 { Q4_K } else { Q3_K };
            } else if ftype == ft::Q2_K_S && n_gqa >= 4 {
                new_type = Q4_K;
            } else if ftype == ft::IQ3_XXS {
                new_type = if n_gqa >= 4 {
                    Q4_K
                } else if !self.has_imatrix {
                    IQ3_S
                } else {
                    IQ3_XXS
                };
            } else if (ftype == ft::IQ3_XS || ftype == ft::IQ3_S) && n_gqa >= 4 {
                new_type = Q4_K;
            } else if ftype == ft::IQ3_M {
                new_type = Q4_K;
            } else if ftype == ft::Q3_K_M {
                new_type = if i < 2 { Q5_K } else { Q4_K };
            } else if ftype == ft::Q3_K_L {
                new_type = Q5_K;
            } else if (ftype == ft::IQ4_NL || ftype == ft::IQ4_XS) && n_gqa >= 4 {
                new_type = Q5_K;
            } else if (ftype == ft::Q4_K_M || ftype == ft::Q5_K_M) && use_more_bits(i, self.n_attention_wv) {
                new_type = Q6_K;
            } else if ftype == ft::Q4_K_S && i < 4 {
                new_type = Q5_K;
            }
            if self.m.is_70b && (new_type == Q3_K || new_type == Q4_K) {
                // 8 heads share attn_v in the 70B model: more bits cost little
                new_type = Q5_K;
            }
            if n_expert == 8 {
                new_type = Q8_0;
            }
            self.i_attention_wv += 1;
        } else if cat == AttentionK {
            if n_expert == 8 {
                new_type = Q8_0;
            } else if ftype == ft::IQ3_XS {
                new_type = IQ3_XXS;
            } else if ftype == ft::IQ3_XXS {
                new_type = IQ2_S;
            }
        } else if cat == AttentionQ {
            if ftype == ft::IQ3_XS {
                new_type = IQ3_XXS;
            } else if ftype == ft::IQ3_XXS {
                new_type = IQ2_S;
            }
        } else if cat == FfnDown {
            let (il, n) = self.layer_info(self.i_ffn_down, name)?;
            if ftype == ft::Q2_K {
                new_type = Q3_K;
            } else if ftype == ft::Q2_K_S {
                if il < n / 8 {
                    new_type = Q4_K;
                }
            } else if ftype == ft::IQ3_XXS && !self.has_imatrix {
                new_type = if il < n / 8 { Q4_K } else { Q3_K };
            } else if ftype == ft::Q3_K_M {
                new_type = if il < n / 16 {
                    Q5_K
                } else if !falcon || use_more_bits(il, n) {
                    Q4_K
                } else {
                    Q3_K
                };
            } else if ftype == ft::IQ3_M && (il < n / 8 || (n_expert == 8 && use_more_bits(il, n))) {
                new_type = Q4_K;
            } else if ftype == ft::Q3_K_L {
                new_type = if falcon { Q4_K } else { Q5_K };
            } else if ftype == ft::Q4_K_M {
                if falcon {
                    new_type = if il < n / 16 {
                        Q6_K
                    } else if use_more_bits(il, n) {
                        Q5_K
                    } else {
                        Q4_K
                    };
                } else if use_more_bits(il, n) {
                    new_type = Q6_K;
                }
            } else if il < n / 8 && (ftype == ft::IQ4_NL || ftype == ft::IQ4_XS) && !self.has_imatrix {
                new_type = Q5_K;
            } else if ftype == ft::Q5_K_M && use_more_bits(il, n) {
                new_type = Q6_K;
            } else if ftype == ft::Q4_K_S && !falcon && il < n / 8 {
                new_type = Q5_K;
            } else if (ftype == ft::Q4_0 || ftype == ft::Q5_0) && self.has_imatrix && il < n / 8 {
                // with an imatrix, the first ffn_down layers of Q4_0/Q5_0 get the _1 type
                new_type = if ftype == ft::Q4_0 { Q4_1 } else { Q5_1 };
            }
            self.i_ffn_down += 1;
        } else if cat == AttentionOutput {
            if !falcon {
                if n_expert == 8 {
                    if [
                        ft::Q2_K,
                        ft::IQ3_XS,
                        ft::IQ3_XXS,
                        ft::Q3_K_S,
                        ft::Q3_K_M,
                        ft::IQ4_NL,
                        ft::Q4_K_S,
                        ft::Q4_K_M,
                        ft::IQ3_S,
                        ft::IQ3_M,
                        ft::IQ4_XS,
                    ]
                    .contains(&ftype)
                    {
                        new_type = Q5_K;
                    }
                } else if ftype == ft::Q2_K {
                    new_type = Q3_K;
                } else if ftype == ft::IQ3_XXS {
                    new_type = IQ3_S;
                } else if ftype == ft::Q3_K_M {
                    new_type = Q4_K;
                } else if ftype == ft::Q3_K_L {
                    new_type = Q5_K;
                } else if ftype == ft::IQ3_M {
                    new_type = Q4_K;
                }
            } else if ftype == ft::Q3_K_L {
                new_type = Q4_K;
            }
        } else if cat == AttentionQkv {
            if ftype == ft::Q3_K_M || ftype == ft::Q3_K_L || ftype == ft::IQ3_M {
                new_type = Q4_K;
            } else if ftype == ft::Q4_K_M {
                new_type = Q5_K;
            } else if ftype == ft::Q5_K_M {
                new_type = Q6_K;
            }
        } else if cat == FfnGate || cat == FfnUp {
            let i = if cat == FfnGate { self.i_ffn_gate } else { self.i_ffn_up };
            let (il, n) = self.layer_info(i, name)?;
            if ftype == ft::IQ3_XS && il >= n / 8 && il < 7 * n / 8 {
                new_type = IQ3_XXS;
            }
            if cat == FfnGate {
                self.i_ffn_gate += 1;
            } else {
                self.i_ffn_up += 1;
            }
        }
        Ok(new_type)
    }

    /// `tensor_type_fallback`: a type whose block size does not divide the
    /// rows falls back to a 32-block type, and to F16 if even that fails.
    fn fallback(&mut self, name: &str, ne: &[i64; 4], target: GgmlType) -> Result<GgmlType> {
        use GgmlType::*;
        let ncols = ne[0];
        let qk = target.block_size() as i64;
        if ncols % qk == 0 {
            return Ok(target);
        }
        self.n_fallback += 1;
        let mut ret = match target {
            IQ1_S | IQ1_M | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ4_XS => IQ4_NL,
            Q2_0 | Q2_K | Q3_K | TQ1_0 | TQ2_0 => Q4_0,
            Q4_K => Q5_0,
            Q5_K => Q5_1,
            Q6_K => Q8_0,
            _ if qk <= 32 => target,
            _ => return Err(Error::model(format!("no tensor type fallback is defined for type {target}"))),
        };
        let mut note = String::new();
        if ncols % ret.block_size() as i64 != 0 {
            note = String::from("(WARNING: must use F16 due to unusual shape) ");
            ret = F16;
        }
        crate::log_warn!(
            "warning: {name:<36} - ncols {ncols:>6} not divisible by {qk:>3} (required for type {:>7}) {note}-> falling back to {:>7}",
            target.name(),
            ret.name()
        );
        Ok(ret)
    }
}
