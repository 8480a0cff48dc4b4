//! `olmo2`: OLMo 2 (and OLMo 3's sliding-window layers). No norms before
//! the sublayers: RMS norms of their outputs instead (post-norms), and of
//! the whole q and k projections before rope; NEOX rope.

use super::{Block, Family, QkNorm, Rope};
use crate::error::Result;
use crate::model::hparams::{HParams, Keys};

pub static FAMILY: Family = Family {
    name: "olmo2",
    rope: Rope::Neox,
    block: Block { pre_norms: false, qk_norm: QkNorm::Whole, post_norms: true, ..Block::PLAIN },
    read_hparams,
    size_name,
};

fn read_hparams(hp: &mut HParams, keys: &Keys) -> Result<()> {
    // (the reference asserts these in its graph builder, and aborts)
    super::require_full_rope(hp, keys)?;
    hp.n_swa = keys.u32("%s.attention.sliding_window")?.unwrap_or(0);
    if hp.n_swa > 0 {
        // OLMo 3: 3 of every 4 layers slide, with the global rope base
        // and no frequency scale
        hp.slide(keys, 4)?;
        hp.rope_freq_base_train_swa = keys.f32("%s.rope.freq_base_swa")?.unwrap_or(hp.rope_freq_base_train);
        hp.rope_freq_scale_train_swa = 1.0;
        hp.swa_plain_rope = true;
    }
    Ok(())
}

fn size_name(hp: &HParams) -> &'static str {
    match hp.n_layer {
        16 => "1B",
        32 => "7B",
        40 => "13B",
        64 => "32B",
        _ => "?B",
    }
}
