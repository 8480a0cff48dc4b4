//! `exaone4`: EXAONE 4.0. As olmo2, norms after each sublayer only, with
//! RMS norms over each head of q and k; the 32B model slides windows on 3
//! of every 4 layers, rope only there; llama3 rope factors when the file
//! has them; NEOX rope.

use super::{Block, Family, QkNorm, Rope};
use crate::error::{Error, Result};
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "exaone4",
    rope: Rope::Neox,
    block: Block { pre_norms: false, qk_norm: QkNorm::PerHead, post_norms: true, ..Block::PLAIN },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    if hp.n_layer == 64 {
        // the 32B model: 3 of every 4 layers slide (4096 tokens unless the
        // file says), the others attend without rope
        hp.n_swa = 4096;
        hp.slide(keys, 4)?;
        hp.nope_global = true;
        hp.rope_freq_base_train_swa = keys.f32("%s.rope.freq_base_swa")?.unwrap_or(hp.rope_freq_base_train);
        hp.rope_freq_scale_train_swa = hp.rope_freq_scale_train;
    }
    if let Some(n) = keys.u32("%s.attention.sliding_window")? {
        hp.n_swa = n;
    }
    if keys.u32("%s.nextn_predict_layers")?.unwrap_or(0) > 0 {
        return Err(Error::model(format!(
            "not implemented yet: next-token prediction layers ({} > 0)",
            keys.full("%s.nextn_predict_layers")
        )));
    }
    super::require_full_rope(hp, keys)
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        30 => "1.2B",
        64 => "32B",
        _ => "?B",
    }
}
