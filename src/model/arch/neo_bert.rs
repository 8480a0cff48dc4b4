//! `neo-bert`: NeoBERT, a pre-norm encoder: the llama block (RMS norms,
//! rope of NORM pairs, one `attn_qkv`, a SwiGLU of one `ffn_up` of both
//! halves, no biases) attending both ways over the batch, its final norm
//! `enc.output_norm`; a bert-style classifier head for RANK pooling.

use super::{Block, ClsHead, Encoder, Family, Ffn, GateUp, Need, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "neo-bert",
    rope: Rope::Norm,
    block: Block {
        ffn: Ffn::SwiGlu,
        gate_up: GateUp::Fused,
        tied_output: true,
        qkv_bias: Need::Absent,
        encoder: Some(Encoder { cls_head: ClsHead::Full, output_norm: "enc.output_norm", ..Encoder::PRE_NORM }),
        ..Block::PLAIN
    },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    hp.f_norm_rms_eps = keys.required_f32("%s.attention.layer_norm_rms_epsilon")?;
    super::require_equal_heads(hp, keys)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        28 => "250M",
        _ => "?B",
    }
}
