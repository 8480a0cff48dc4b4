//! The memory (KV cache) API. A `llama_memory_t` is its context's handle
//! (the KV cache lives in the context). A context of an encoder has no
//! memory: `llama_get_memory` gives NULL, and every call here takes NULL
//! as the reference does, doing nothing and answering as an empty memory
//! (`seq_rm` true, positions -1, no shift).

use super::boundary::*;
use super::types::*;
use crate::context::Context;
use crate::error::{Error, Result};
use std::ffi::c_int;

fn mem_mut<'a>(mem: llama_memory_t) -> Result<&'a mut Context> {
    // SAFETY: a non-NULL memory handle is the context pointer handed out by
    // llama_get_memory, used from one thread at a time (the C API's rule).
    unsafe { mem.cast::<Context>().as_mut() }.ok_or_else(|| Error::invalid("mem is NULL"))
}

/// A sequence id in [0, n_seq_max) (or negative, "any", where allowed).
fn check_seq(c: &Context, seq: llama_seq_id, allow_any: bool) -> Result<()> {
    if (seq < 0 && !allow_any) || seq >= c.cparams.n_seq_max as i32 {
        return Err(Error::invalid(format!("seq_id {seq} is out of range [0, {})", c.cparams.n_seq_max)));
    }
    Ok(())
}

/// The reference's range convention: p0 < 0 is 0, p1 < 0 is infinity.
fn range(p0: llama_pos, p1: llama_pos) -> (i32, i32) {
    (p0.max(0), if p1 < 0 { i32::MAX } else { p1 })
}

#[no_mangle]
pub extern "C" fn llama_memory_clear(mem: llama_memory_t, data: bool) {
    if mem.is_null() {
        return;
    }
    guard("llama_memory_clear", (), || {
        mem_mut(mem)?.kv.clear_all(data);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_rm(mem: llama_memory_t, seq_id: llama_seq_id, p0: llama_pos, p1: llama_pos) -> bool {
    if mem.is_null() {
        return true;
    }
    guard("llama_memory_seq_rm", false, || {
        let c = mem_mut(mem)?;
        check_seq(c, seq_id, true)?;
        let (p0, p1) = range(p0, p1);
        c.kv.seq_rm(seq_id, p0, p1);
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_cp(
    mem: llama_memory_t,
    seq_id_src: llama_seq_id,
    seq_id_dst: llama_seq_id,
    p0: llama_pos,
    p1: llama_pos,
) {
    if mem.is_null() {
        return;
    }
    guard("llama_memory_seq_cp", (), || {
        let c = mem_mut(mem)?;
        check_seq(c, seq_id_src, false)?;
        check_seq(c, seq_id_dst, false)?;
        let (p0, p1) = range(p0, p1);
        c.kv.seq_cp(seq_id_src, seq_id_dst, p0, p1);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_keep(mem: llama_memory_t, seq_id: llama_seq_id) {
    if mem.is_null() {
        return;
    }
    guard("llama_memory_seq_keep", (), || {
        let c = mem_mut(mem)?;
        check_seq(c, seq_id, false)?;
        c.kv.seq_keep(seq_id);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_add(
    mem: llama_memory_t,
    seq_id: llama_seq_id,
    p0: llama_pos,
    p1: llama_pos,
    delta: llama_pos,
) {
    if mem.is_null() {
        return;
    }
    guard("llama_memory_seq_add", (), || {
        let c = mem_mut(mem)?;
        check_seq(c, seq_id, false)?;
        let (p0, p1) = range(p0, p1);
        c.shift_positions(seq_id, p0, p1, |p| i64::from(p) + i64::from(delta))
    })
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_div(
    mem: llama_memory_t,
    seq_id: llama_seq_id,
    p0: llama_pos,
    p1: llama_pos,
    d: c_int,
) {
    if mem.is_null() {
        return;
    }
    guard("llama_memory_seq_div", (), || {
        let c = mem_mut(mem)?;
        check_seq(c, seq_id, false)?;
        if d <= 1 {
            return Err(Error::invalid(format!("d = {d} must be > 1")));
        }
        let (p0, p1) = range(p0, p1);
        c.shift_positions(seq_id, p0, p1, |p| i64::from(p / d))
    })
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_pos_min(mem: llama_memory_t, seq_id: llama_seq_id) -> llama_pos {
    if mem.is_null() {
        return -1;
    }
    guard("llama_memory_seq_pos_min", -1, || {
        let c = mem_mut(mem)?;
        check_seq(c, seq_id, false)?;
        Ok(c.kv.pos_min(seq_id))
    })
}

#[no_mangle]
pub extern "C" fn llama_memory_seq_pos_max(mem: llama_memory_t, seq_id: llama_seq_id) -> llama_pos {
    if mem.is_null() {
        return -1;
    }
    guard("llama_memory_seq_pos_max", -1, || {
        let c = mem_mut(mem)?;
        check_seq(c, seq_id, false)?;
        Ok(c.kv.pos_max(seq_id))
    })
}

#[no_mangle]
pub extern "C" fn llama_memory_can_shift(mem: llama_memory_t) -> bool {
    if mem.is_null() {
        return false;
    }
    guard("llama_memory_can_shift", false, || mem_mut(mem).map(|_| true))
}
