//! Model families. A family is a description, [`Family`]: its
//! `general.architecture` name, its rope kind, the keys it reads beyond the
//! shared ones, its size classes, and the recipe of its transformer block,
//! [`Block`]: which optional tensors a block has and which building block
//! each step takes. `weights.rs` binds the tensors from the recipe,
//! `context/forward.rs` walks it, and `save.rs` writes back the hyperparameters
//! the family read: each fact is read once, here.
//!
//! Adding a dense family is one file in this folder (its `FAMILY`) and one
//! line in [`FAMILIES`]; a building block the recipe does not offer yet is a
//! new field of `Block` and one branch in the forward pass. This mirrors the
//! reference's `src/models/<family>.cpp` (`load_arch_hparams`,
//! `load_arch_tensors`, the graph builder) with the graph as data rather
//! than code: the families differ in a handful of switches, and keeping one
//! forward pass keeps one place for the bit-exact numerics.

mod bert;
mod cohere2;
mod dots1;
mod exaone4;
mod falcon;
mod gemma;
mod gemma2;
mod gemma3;
mod gemma_embedding;
mod gpt2;
mod gpt_oss;
mod granite;
mod granitemoe;
mod jina_bert_v2;
mod llama;
mod mistral3;
mod modern_bert;
mod neo_bert;
mod nomic_bert;
mod olmo2;
mod olmoe;
mod phi2;
mod phi3;
mod qwen2;
mod qwen2moe;
mod qwen3;
mod qwen3moe;
mod smollm3;
mod stablelm;
mod starcoder2;

use super::hparams::{HParams, Keys};
use crate::error::{Error, Result};

/// Every family minfer runs, in the order the README lists them.
pub static FAMILIES: &[&Family] = &[
    &llama::FAMILY,
    &gemma3::FAMILY,
    &qwen2::FAMILY,
    &qwen3::FAMILY,
    &smollm3::FAMILY,
    &gemma::FAMILY,
    &gemma2::FAMILY,
    &olmo2::FAMILY,
    &granite::FAMILY,
    &phi3::FAMILY,
    &phi2::FAMILY,
    &starcoder2::FAMILY,
    &stablelm::FAMILY,
    &gpt2::FAMILY,
    &falcon::FAMILY,
    &exaone4::FAMILY,
    &cohere2::FAMILY,
    &mistral3::FAMILY,
    &qwen3moe::FAMILY,
    &qwen2moe::FAMILY,
    &olmoe::FAMILY,
    &granitemoe::FAMILY,
    &gpt_oss::FAMILY,
    &dots1::FAMILY,
    &bert::FAMILY,
    &nomic_bert::FAMILY,
    &jina_bert_v2::FAMILY,
    &neo_bert::FAMILY,
    &modern_bert::FAMILY,
    &gemma_embedding::FAMILY,
];

/// A model family: what the loader, the forward pass and the C API need to
/// know about one `general.architecture`.
pub struct Family {
    /// The `general.architecture` string, which also prefixes its keys.
    pub name: &'static str,
    pub rope: Rope,
    pub block: Block,
    /// The family's own keys, read after the shared ones (the reference's
    /// `load_arch_hparams`).
    pub read_hparams: fn(&mut HParams, &Keys) -> Result<()>,
    /// The size class in the model's description ("?B" when the
    /// reference's table for the family has no entry).
    pub size_name: fn(&HParams) -> &'static str,
}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Family {
    fn eq(&self, other: &Family) -> bool {
        self.name == other.name
    }
}

/// How rope pairs the dimensions of a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rope {
    /// No rope: positions come from learned embeddings (gpt2;
    /// LLAMA_ROPE_TYPE_NONE).
    None,
    /// Adjacent pairs (x0, x1), (x2, x3), ... (LLAMA_ROPE_TYPE_NORM).
    Norm,
    /// The two halves of the head, (x0, x_{d/2}), ... (LLAMA_ROPE_TYPE_NEOX).
    Neox,
}

impl Rope {
    /// The llama_rope_type value `llama_model_rope_type` returns.
    pub fn llama_rope_type(self) -> i32 {
        match self {
            Rope::None => -1,
            Rope::Norm => 0,
            Rope::Neox => 2,
        }
    }
}

/// Whether a block has an optional tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Absent,
    /// Bound when the file has it.
    Optional,
    Required,
}

/// The feed-forward's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ffn {
    /// Gated: SiLU(gate) * up (ggml_vec_swiglu_f32).
    SwiGlu,
    /// Gated: GELU(gate) * up, tanh approximation (ggml's GEGLU).
    GeGlu,
    /// Not gated: GELU(up), no `ffn_gate` (ggml_gelu).
    Gelu,
    /// Gated: ReLU(gate) * up (ggml's REGLU; modern-bert's `reglu`).
    ReGlu,
}

/// Sequential blocks, or parallel ones: attention and FFN on one normed
/// input, their outputs added to x in the family's order (the sums round
/// differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parallel {
    No,
    /// x = (attn + ffn) + x (phi2, falcon).
    AttnFfn,
    /// x = (ffn + x) + attn (cohere2).
    FfnResidualAttn,
}

/// What `HParams::f_logit_scale` does to the logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitScale {
    /// Divided by it (granite).
    Divide,
    /// Multiplied by it (cohere2).
    Multiply,
}

/// The norm of the blocks' inputs and of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// x / sqrt(mean(x²) + eps) · w (ggml_rms_norm), eps
    /// `%s.attention.layer_norm_rms_epsilon`.
    Rms,
    /// (x - mean) / sqrt(var + eps) · w + b (ggml_norm), eps
    /// `%s.attention.layer_norm_epsilon`; the biases as `Block::norm_bias`.
    Layer,
}

/// Where the feed-forward's gate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateUp {
    /// `ffn_gate` and `ffn_up`, two matrices.
    Split,
    /// One `ffn_up` of 2 * n_ff rows: the gate is the first half of each
    /// output row, up the second (phi3: ggml_swiglu of one tensor).
    Fused,
}

/// How q and k are normed per token after their projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QkNorm {
    None,
    /// `attn_q_norm`, `attn_k_norm` of one head's size: an RMS norm over
    /// each head (qwen3, gemma3).
    PerHead,
    /// Of the whole projection's size: one RMS norm over all heads of a
    /// token (olmo2).
    Whole,
    /// When the file has them, [head_dim, n_head] weights: a LayerNorm
    /// (no bias) over each head with that head's weights (StableLM 2 12B).
    LayerPerHead,
}

/// Where the attention's 1/sqrt(d) goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttnScale {
    /// Into softmax(kq * scale): `HParams::f_attention_scale`, or
    /// 1/sqrt(head size) when that is 0 (most families).
    InSoftmax,
    /// Into q itself, by `HParams::f_attention_scale`; the softmax then
    /// scales by 1 (gemma3).
    IntoQ,
    /// Into q itself, by 1/sqrt(value head size), after rope; the softmax
    /// then scales by 1 (gemma).
    IntoQByHeadSize,
}

/// Which inputs are scaled by sqrt(n_embd) before the first block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbdScale {
    None,
    /// Rows of `token_embd` only, not a caller's embeddings (gemma3:
    /// `ubatch.token ? sqrtf(n_embd) : 1`).
    Tokens,
    /// Every input row (gemma).
    All,
}

/// The recipe of a transformer block, and of what surrounds the blocks.
/// Every block is: [norm] → q, k, v (+ biases) → q/k norms → rope →
/// attention [softcapped] → output projection → [post-norm] → [scale] →
/// residual → [norm] → FFN → [post-norm] → [scale] → residual; or, parallel,
/// norm → (attention, FFN) → x + (attn + ffn).
#[derive(Debug, Clone, Copy)]
pub struct Block {
    /// `attn_norm`, `ffn_norm`: norms of each sublayer's input (olmo2
    /// has none: it norms the outputs, `post_norms`).
    pub pre_norms: bool,
    /// The kind of `attn_norm`, `ffn_norm` and `output_norm`.
    pub norm: Norm,
    /// Their biases (`attn_norm.bias`, ...), LayerNorms only.
    pub norm_bias: Need,
    /// `attn_norm_2` (+ bias): the attention's own input norm, the FFN
    /// keeping `attn_norm` (falcon 40B), used when the file has it; in an
    /// encoder, after the attention's norm, `x = LN(x + block input)` once
    /// more (jina-bert-v2; its bias optional).
    pub attn_norm_2: bool,
    /// Whether the attention and the FFN both read the block's normed
    /// input, and in which order their outputs join x.
    pub parallel: Parallel,
    /// A layer without `ffn_norm` feeds its FFN the attention's normed
    /// input, the sums staying sequential (StableLM 2 12B).
    pub ffn_norm_optional: bool,
    /// `position_embd` rows added to the input rows by position (gpt2).
    pub pos_embd: bool,
    /// `attn_q.bias`, `attn_k.bias`, `attn_v.bias` (or `attn_qkv.bias`
    /// when the file has q, k and v in one `attn_qkv`, which every family
    /// takes).
    pub qkv_bias: Need,
    pub qk_norm: QkNorm,
    /// `post_attention_norm`, `post_ffw_norm`: RMS norms of each sublayer's
    /// output before its residual add.
    pub post_norms: bool,
    pub ffn: Ffn,
    pub gate_up: GateUp,
    /// `attn_output.bias`, `ffn_up.bias`, `ffn_gate.bias`, `ffn_down.bias`
    /// (llama's and granite's optional ones).
    pub proj_bias: Need,
    /// `output.bias`, added to the logits.
    pub output_bias: Need,
    /// How `HParams::f_logit_scale` (when not 0) scales the logits.
    pub logit_scale: LogitScale,
    pub attn_scale: AttnScale,
    /// The attention scores go through cap * tanh(s / cap) before the
    /// softmax, cap = `HParams::f_attn_logit_softcapping` (gemma2).
    pub attn_softcap: bool,
    pub embd_scale: EmbdScale,
    /// The output head is always `token_embd` (an `output.weight` in the
    /// file is not read), where other families use `output.weight` when
    /// the file has one.
    pub tied_output: bool,
    /// The logits go through cap * tanh(logits / cap) when
    /// `HParams::f_final_logit_softcapping` is not 0.
    pub logit_softcap: bool,
    /// Every `HParams::n_no_rope_layer_step`-th layer attends without rope
    /// (smollm3: layers 3, 7, 11, ...).
    pub nope_layers: bool,
    /// The FFN's input norm is `post_attention_norm` rather than
    /// `ffn_norm` (gpt-oss's name for it).
    pub ffn_norm_tensor: &'static str,
    /// `attn_sinks`: per query head, a logit that joins every softmax of
    /// the attention without a value (gpt-oss).
    pub attn_sinks: bool,
    /// The last layer runs on every token, the output rows taken after it
    /// (gpt-oss: its graph selects them after the layers), where the other
    /// families run the last FFN on the output rows alone. The kernels
    /// depend on the row count, so the logits do too.
    pub all_rows_last_layer: bool,
    /// `cls.output` [n_embd, n_cls_out] without bias, when the file has it:
    /// a decoder's RANK head, its scores through a softmax (qwen3's
    /// rerankers).
    pub rank_head: bool,
    /// A BERT-style encoder (`context/encoder.rs`) rather than a decoder:
    /// bidirectional attention over the batch alone (no KV cache), blocks
    /// normed after their residual adds, no output head.
    pub encoder: Option<Encoder>,
    /// The family's mixture-of-experts FFN, used in every layer when the
    /// file has experts (`HParams::n_expert` > 0); a family without one
    /// reads dense FFNs whatever its expert count, as the reference.
    pub moe: Option<Moe>,
}

/// The encoder's recipe (the reference's `src/models/bert.cpp` graph,
/// which its BERT-style families share): the input rows are the token's
/// `token_embd` row + `token_types` row 0 (when the file has it) + the
/// position's `position_embd` row (where `Block::pos_embd`), LayerNormed by
/// `token_embd_norm`; each block is `x = LN(x + attn(x))` with
/// `attn_output_norm`, then `x = LN(x + ffn(x))` with `layer_output_norm`
/// (LayerNorms with biases); the hidden states after the last block are
/// the embeddings (no output norm). The FFN follows `Block::ffn`, with the
/// optional biases of `Block::proj_bias`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Encoder {
    /// q and k are rotated by their positions (nomic-bert); bert reports
    /// the NEOX rope type without rotating anything.
    pub rope: bool,
    /// The FFN's `ffn_up.bias` and `ffn_down.bias` are read when the file
    /// has them and not used (nomic-bert's graph passes none to its FFN).
    pub ffn_bias_unused: bool,
    /// The classifier head the family reads when the file has it (RANK
    /// pooling); a family without one refuses such tensors, as the
    /// reference's tensor count.
    pub cls_head: ClsHead,
    /// `token_types` (Optional: bert, nomic-bert; Required: jina-bert-v2).
    pub token_types: Need,
    /// `attn_q_norm`, `attn_k_norm` with biases, when the file has them:
    /// LayerNorms of the whole q and k rows (jina-bert-v2).
    pub qk_norm: bool,
    /// The FFN's kind comes from the file (jina-bert-v2): an `ffn_gate`
    /// makes it GEGLU of gate and up, an `ffn_up` of 2·n_ff rows a GEGLU of
    /// its two halves, else GELU of up; `ffn_up.bias` (as wide as `ffn_up`)
    /// optional, `attn_output.bias` and `ffn_down.bias` required.
    pub ffn_from_file: bool,
    /// ALiBi's maximum bias (jina-bert-v2: 8; 0: none): every score gets
    /// `slope(head) · −|p_query − p_key|` (`context::attention::Alibi`).
    pub alibi_max_bias: f32,
    /// The blocks are the decoder recipe's (pre-norm: neo-bert,
    /// modern-bert, gemma-embedding), run by `forward.rs` over the batch
    /// alone with bidirectional attention, normed at the end by
    /// `output_norm` (its name here); the bert-style switches above are not
    /// read.
    pub pre_norm: bool,
    /// The final norm's tensor name (pre-norm encoders).
    pub output_norm: &'static str,
    /// `token_embd_norm`: the input rows' LayerNorm (bert: Required, with
    /// its bias; modern-bert: Required, no bias; Absent for the others).
    pub tok_norm: Need,
    /// Sliding-window layers see a symmetric window: |p_q − p_k| ≤ n_swa / 2
    /// (the reference's LLAMA_SWA_TYPE_SYMMETRIC; modern-bert,
    /// gemma-embedding).
    pub swa_symmetric: bool,
    /// The control vector is added after each block (the graph's
    /// build_cvec: gemma-embedding); the other encoders' graphs have none.
    pub cvec: bool,
    /// Layer 0's `attn_norm` is optional, its input unnormed without it
    /// (modern-bert).
    pub first_attn_norm_optional: bool,
    /// `dense_2` and `dense_3`, when the file has them: two products after
    /// the pooling (or of every token's row without pooling), the
    /// sentence-transformers dense modules (gemma-embedding).
    pub dense_out: bool,
}

impl Encoder {
    /// bert's: learned positions, no rope, a full classifier head.
    pub const BERT: Encoder = Encoder {
        rope: false,
        ffn_bias_unused: false,
        cls_head: ClsHead::Full,
        token_types: Need::Optional,
        qk_norm: false,
        ffn_from_file: false,
        alibi_max_bias: 0.0,
        pre_norm: false,
        output_norm: "output_norm",
        tok_norm: Need::Required,
        swa_symmetric: false,
        cvec: false,
        first_attn_norm_optional: false,
        dense_out: false,
    };

    /// A pre-norm encoder's defaults (`pre_norm`): no input norm, no
    /// classifier head, the final norm `output_norm`.
    pub const PRE_NORM: Encoder = Encoder {
        pre_norm: true,
        cls_head: ClsHead::None,
        token_types: Need::Absent,
        tok_norm: Need::Absent,
        ..Encoder::BERT
    };
}

/// The classifier head of an encoder (`cls`, `cls.output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClsHead {
    None,
    /// `cls` [n_embd, n_embd] + bias, then `cls.output` [n_embd, n_cls_out]
    /// + bias (bert).
    Full,
    /// `cls` [n_embd, 1] + bias alone: one score (jina-bert-v2's rerankers).
    Score,
    /// `cls` [n_embd, n_embd] without bias, GELU instead of tanh, then
    /// `cls_norm` (a LayerNorm without bias), then `cls.output` + bias
    /// (modern-bert), each where the file has it.
    Modern,
}

/// A mixture-of-experts FFN (the reference's `build_moe_ffn`): the router's
/// logits through a softmax, the `n_expert_used` most probable experts per
/// token, their probabilities as weights (renormalised to sum 1 where
/// `norm_weights`), the weighted sum of the chosen experts' SwiGLU FFNs,
/// and a shared expert's output added where the family has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moe {
    pub norm_weights: bool,
    pub shared: SharedExpert,
    pub gating: Gating,
    pub act: ExpertAct,
    /// `ffn_gate_inp.bias` and the experts' `ffn_{gate,up,down}_exps.bias`
    /// (gpt-oss).
    pub biases: bool,
    /// `exp_probs_b.bias` (optional): added to the probabilities to
    /// choose the experts, not to weight them (DeepSeek V3's selection
    /// bias; dots1).
    pub selection_bias: bool,
    /// The gating, the renormalisation and a scale of the weights come from
    /// the file's keys (`HParams::expert_gating_func`, ...; dots1), not
    /// from `gating` and `norm_weights`.
    pub from_keys: bool,
}

impl Moe {
    /// The gating and the renormalisation of this recipe for a model, and
    /// the scale of its weights (1: none).
    pub fn routing(&self, hp: &HParams) -> (Gating, bool, f32) {
        if !self.from_keys {
            return (self.gating, self.norm_weights, 1.0);
        }
        let gating = match hp.expert_gating_func {
            2 => Gating::Sigmoid,
            3 => Gating::SoftmaxWeight,
            4 => Gating::SqrtSoftplus,
            _ => Gating::Softmax,
        };
        let s = hp.expert_weights_scale;
        (gating, hp.expert_weights_norm, if s == 0.0 { 1.0 } else { s })
    }
}

/// How the router's logits become the chosen experts' weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gating {
    /// A softmax over every expert; the k best by probability, weighted by
    /// their probabilities.
    Softmax,
    /// The k best by logit, weighted by a softmax over those k alone
    /// (gpt-oss).
    SoftmaxWeight,
    /// An independent sigmoid per expert (`1 / (1 + expf(-x))`); the k best
    /// by probability (dots1, DeepSeek V3).
    Sigmoid,
    /// `sqrtf(softplus(x))` per expert, softplus `x > 20 ? x : logf(1 +
    /// expf(x))` (`expert_gating_func` 4).
    SqrtSoftplus,
}

/// The experts' activation of gate and up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpertAct {
    /// silu(gate) · up
    SwiGlu,
    /// gpt-oss's clamped SwiGLU (`ggml_swiglu_oai`, alpha 1.702, limit 7):
    /// x = min(gate, 7), y = clamp(up, -7, 7), x · sigmoid(1.702 x) · (y + 1)
    SwiGluOai,
}

/// A mixture-of-experts layer's expert that every token takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedExpert {
    None,
    /// `ffn_*_shexp` when `HParams::n_ff_shexp` > 0, added as it is
    /// (granite).
    Plain,
    /// `ffn_*_shexp` (always), scaled by sigmoid(`ffn_gate_inp_shexp` · x)
    /// (qwen2moe).
    SigmoidGated,
}

impl Block {
    /// The plain pre-norm block (llama's): no biases, norms or scaling
    /// beyond RMS norms before each sublayer, SwiGLU, 1/sqrt(head size) in
    /// the softmax. A family states where it differs:
    /// `Block { qk_norm: QkNorm::PerHead, ..Block::PLAIN }`.
    pub const PLAIN: Block = Block {
        pre_norms: true,
        norm: Norm::Rms,
        norm_bias: Need::Absent,
        attn_norm_2: false,
        parallel: Parallel::No,
        ffn_norm_optional: false,
        pos_embd: false,
        qkv_bias: Need::Optional,
        qk_norm: QkNorm::None,
        post_norms: false,
        ffn: Ffn::SwiGlu,
        gate_up: GateUp::Split,
        proj_bias: Need::Absent,
        output_bias: Need::Absent,
        logit_scale: LogitScale::Divide,
        attn_scale: AttnScale::InSoftmax,
        attn_softcap: false,
        embd_scale: EmbdScale::None,
        tied_output: false,
        nope_layers: false,
        logit_softcap: false,
        moe: None,
        ffn_norm_tensor: "ffn_norm",
        attn_sinks: false,
        all_rows_last_layer: false,
        rank_head: false,
        encoder: None,
    };

    /// The recipe's mixture of experts in its most common form (llama's
    /// Mixtral, qwen3moe, granite MoE): renormalised weights.
    pub const MOE: Moe = Moe {
        norm_weights: true,
        shared: SharedExpert::None,
        gating: Gating::Softmax,
        act: ExpertAct::SwiGlu,
        biases: false,
        selection_bias: false,
        from_keys: false,
    };
}

/// The reference's graph assertion of several families (it aborts where
/// this refuses the file): rope over the whole head, and key and value
/// heads of one size.
pub(crate) fn require_full_rope(hp: &HParams, keys: &Keys) -> Result<()> {
    if hp.n_rot != hp.n_embd_head_k || hp.n_embd_head_k != hp.n_embd_head_v {
        return Err(Error::model(format!(
            "{}: rope dimensions ({}) and the key and value head sizes ({}, {}) must be equal",
            keys.full("%s"),
            hp.n_rot,
            hp.n_embd_head_k,
            hp.n_embd_head_v
        )));
    }
    Ok(())
}

/// As many key/value heads as query heads (olmoe, dots1: the reference
/// fails such a file at its graph or shape checks).
pub(crate) fn require_kv_heads_equal_heads(hp: &HParams, keys: &Keys) -> Result<()> {
    if hp.n_head_kv != hp.n_head {
        return Err(Error::model(format!(
            "{}: grouped key/value heads are not supported by this family ({} != {})",
            keys.arch,
            keys.full("%s.attention.head_count_kv"),
            keys.full("%s.attention.head_count")
        )));
    }
    Ok(())
}

/// Key and value heads of one size (the reference's graph assertion of
/// most families; it aborts where this refuses the file).
pub(crate) fn require_equal_heads(hp: &HParams, keys: &Keys) -> Result<()> {
    if hp.n_embd_head_k != hp.n_embd_head_v {
        return Err(Error::model(format!(
            "{}: the key and value head sizes ({}, {}) must be equal",
            keys.full("%s"),
            hp.n_embd_head_k,
            hp.n_embd_head_v
        )));
    }
    Ok(())
}

/// Refuses a file with experts: the family runs mixture-of-experts layers
/// in the reference (llama's Mixtral, granite MoE, phimoe-style phi3), not
/// yet in minfer.
pub(crate) fn refuse_experts(keys: &Keys) -> Result<()> {
    if keys.u32("%s.expert_count")?.unwrap_or(0) > 0 {
        return Err(Error::model(format!(
            "not implemented yet: mixture-of-experts layers ({} > 0)",
            keys.full("%s.expert_count")
        )));
    }
    Ok(())
}

/// The shared checks of a family whose every layer is a mixture of
/// experts (the reference throws "n_expert must be > 0"), and the experts'
/// FFN size: `%s.expert_feed_forward_length` where `exp_key` (else
/// n_ff / n_expert_used, as qwen2moe and qwen3moe compute it), or n_ff.
pub(crate) fn require_experts(hp: &mut HParams, keys: &Keys, exp_key: bool) -> Result<()> {
    if hp.n_expert == 0 {
        return Err(Error::model(format!("{} must be > 0 for {}", keys.full("%s.expert_count"), keys.arch)));
    }
    if exp_key {
        let key = keys.u32_per_layer("%s.expert_feed_forward_length", hp.n_layer)?;
        hp.n_ff_exp_key = key.as_ref().map_or(0, |v| v[0]);
        let used = hp.n_expert_used.clone();
        hp.n_ff_exp = match key {
            Some(v) if v[0] != 0 => v,
            _ => hp.n_ff.iter().zip(&used).map(|(&ff, &u)| ff / u.max(1)).collect(),
        };
    }
    if hp.n_ff_exp.contains(&0) {
        return Err(Error::model(format!("{}: the experts' FFN size is 0", keys.arch)));
    }
    Ok(())
}

/// The LayerNorm families' epsilon, `%s.attention.layer_norm_epsilon`
/// (required), in place of the RMS one, which they do not read (as the
/// reference: its saver then writes 0 for it).
pub(crate) fn read_layer_norm_eps(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.f_norm_eps = keys.required_f32("%s.attention.layer_norm_epsilon")?;
    hp.f_norm_rms_eps = 0.0;
    Ok(())
}

/// The family of a `general.architecture` name, if minfer runs it.
pub fn find(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().copied().find(|f| f.name == name)
}

/// "llama, gemma3, qwen2, qwen3": the families minfer runs.
pub fn supported_list() -> String {
    FAMILIES.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(n_layer: u32, n_embd: u32, n_head: u32, n_head_kv: u32, n_vocab: u32) -> HParams {
        HParams { n_layer, n_embd, n_head: vec![n_head], n_head_kv: vec![n_head_kv], n_vocab, ..HParams::default() }
    }

    #[test]
    fn names_are_unique_and_found() {
        for f in FAMILIES {
            assert_eq!(find(f.name), Some(*f));
            assert_eq!(FAMILIES.iter().filter(|g| g.name == f.name).count(), 1);
        }
        assert_eq!(find("deepseek2"), None);
        assert!(supported_list().starts_with("llama, gemma3, qwen2, qwen3"));
    }

    #[test]
    fn size_classes_and_rope_types_follow_the_reference() {
        let size = |name: &str, h: HParams| (find(name).unwrap().size_name)(&h);
        // SmolLM2-135M has 30 layers: the reference calls it "256M".
        assert_eq!(size("llama", hp(30, 576, 9, 3, 49152)), "256M");
        assert_eq!(size("llama", hp(80, 8192, 64, 8, 128256)), "70B");
        assert_eq!(size("gemma3", hp(18, 640, 4, 1, 262144)), "270M");
        assert_eq!(size("qwen2", hp(24, 1024, 14, 2, 151936)), "0.5B");
        assert_eq!(size("qwen3", hp(3, 64, 4, 2, 1000)), "?B");
        assert_eq!(size("gemma2", hp(46, 4608, 32, 16, 256000)), "27B");
        assert_eq!(size("granite", hp(40, 2560, 32, 8, 49155)), "3B");
        assert_eq!(size("phi3", hp(40, 5120, 40, 10, 100352)), "14B");
        let rope = |name: &str| find(name).unwrap().rope.llama_rope_type();
        let names = ["llama", "gemma3", "qwen2", "qwen3", "smollm3", "gemma", "gemma2", "olmo2", "granite", "phi3"];
        assert_eq!(names.map(rope), [0, 2, 2, 2, 0, 2, 2, 2, 0, 2]);
    }

    /// The README's list of supported families is written from this
    /// registry: `MINFER_UPDATE_README=1 cargo test --lib readme` rewrites it.
    #[test]
    fn the_readme_lists_the_registry() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let (open, close) = ("<!-- families -->", "<!-- /families -->");
        let start = readme.find(open).expect("README.md has a <!-- families --> marker") + open.len();
        let end = start + readme[start..].find(close).expect("README.md has a <!-- /families --> marker");
        let want = supported_list();
        if readme[start..end] != want && std::env::var_os("MINFER_UPDATE_README").is_some() {
            std::fs::write(path, format!("{}{want}{}", &readme[..start], &readme[end..])).unwrap();
            return;
        }
        assert_eq!(&readme[start..end], want, "README.md's family list (MINFER_UPDATE_README=1 rewrites it)");
    }
}
