//! Control vectors (`llama_set_adapter_cvec`): a direction per layer added to
//! the residual stream after the layer, for the layers of a range, as the
//! reference's llama_adapter_cvec holds them.

use crate::error::{Error, Result};

/// The context's control vector: kept once set, as the reference keeps its
/// tensors (a later call with a shorter buffer leaves the layers it does not
/// cover as they were; NULL data only disables it).
#[derive(Debug, Clone, Default)]
pub struct ControlVector {
    /// [n_layer][n_embd], zeros until set; layer 0 never has one.
    dirs: Vec<f32>,
    n_embd: usize,
    /// The layers it is added after, inclusive; -1, -1 when disabled.
    start: i32,
    end: i32,
}

impl ControlVector {
    /// `data`: the directions of layers 1, 2, ... ([len / n_embd][n_embd],
    /// the reference's layout, which has none for layer 0); None disables.
    pub fn set(
        cv: &mut Option<ControlVector>,
        n_layer: usize,
        model_n_embd: usize,
        data: Option<&[f32]>,
        n_embd: i32,
        il_start: i32,
        il_end: i32,
    ) -> Result<()> {
        let Some(data) = data else {
            if let Some(c) = cv {
                (c.start, c.end) = (-1, -1);
            }
            return Ok(());
        };
        if usize::try_from(n_embd).ok() != Some(model_n_embd) {
            return Err(Error::invalid(format!(
                "control vector n_embd ({n_embd}) does not match model ({model_n_embd})"
            )));
        }
        let c = cv.get_or_insert_with(|| ControlVector {
            dirs: vec![0.0; n_layer * model_n_embd],
            n_embd: model_n_embd,
            start: -1,
            end: -1,
        });
        (c.start, c.end) = (il_start, il_end);
        for il in 1..n_layer {
            let off = model_n_embd * (il - 1);
            if let Some(src) = data.get(off..off + model_n_embd) {
                c.dirs[il * model_n_embd..(il + 1) * model_n_embd].copy_from_slice(src);
            }
        }
        Ok(())
    }

    /// The direction added after layer `il`, if any (layer 0 never).
    pub fn for_layer(&self, il: usize) -> Option<&[f32]> {
        let i = i32::try_from(il).ok()?;
        if il == 0 || i < self.start || i > self.end {
            return None;
        }
        self.dirs.get(il * self.n_embd..(il + 1) * self.n_embd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_ranges_and_disabling_follow_the_reference() {
        let mut cv = None;
        // 3 layers of 2: data for layers 1 and 2
        ControlVector::set(&mut cv, 3, 2, Some(&[1.0, 2.0, 3.0, 4.0]), 2, 0, 2).unwrap();
        let c = cv.as_ref().unwrap();
        assert_eq!(
            (c.for_layer(0), c.for_layer(1), c.for_layer(2)),
            (None, Some(&[1.0, 2.0][..]), Some(&[3.0, 4.0][..]))
        );
        // a shorter buffer keeps layer 2; a narrower range
        ControlVector::set(&mut cv, 3, 2, Some(&[5.0, 6.0]), 2, 2, 2).unwrap();
        let c = cv.as_ref().unwrap();
        assert_eq!((c.for_layer(1), c.for_layer(2)), (None, Some(&[3.0, 4.0][..])));
        // NULL disables; a wrong width is refused and changes nothing
        ControlVector::set(&mut cv, 3, 2, None, 0, 0, 0).unwrap();
        assert_eq!(cv.as_ref().unwrap().for_layer(2), None);
        assert!(ControlVector::set(&mut cv, 3, 2, Some(&[1.0]), 3, 0, 2).is_err());
        assert_eq!(cv.as_ref().unwrap().for_layer(2), None);
    }
}
