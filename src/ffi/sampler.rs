//! The llama_sampler family and the sampler chain: handles over the Rust
//! samplers of crate::sampling, and the function-table calls for a caller's
//! own samplers (llama_sampler_init).

// Most functions here are stubs until their issue lands; their parameters
// are unused until then.
#![allow(unused_variables)]

use super::boundary::*;
use super::types::*;
use crate::sampling::chain::Chain;
use crate::sampling::{adaptive, basic, grammar, mirostat, penalties, Candidates, Sampler, TokenData};
use crate::{Error, Result};
use std::ffi::{c_char, c_void, CStr};
use std::ptr;

#[no_mangle]
pub extern "C" fn llama_sampler_chain_default_params() -> llama_sampler_chain_params {
    llama_sampler_chain_params { no_perf: true }
}

// ---------------------------------------------------------------------------
// Backend sampling (llama_context_params.samplers, llama_set_sampler) runs a
// sampler chain inside the reference's compute graph. minfer samples on the
// host only: no sampler is ever attached to a context, so for a valid
// context the getters return what the reference returns when no backend
// sampler ran (LLAMA_TOKEN_NULL, NULL, 0), quietly; llama_sampler_sample then
// samples from the logits, as with the reference. llama_set_sampler refuses
// with a logged reason.
// ---------------------------------------------------------------------------

/// Checks the context handle of a sampled-output getter.
fn sampled_getter<T>(name: &str, ctx: *mut llama_context, nothing: T, fail: T) -> T {
    guard(name, fail, || {
        super::context::ctx_ref(ctx)?;
        Ok(nothing)
    })
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_token_ith(ctx: *mut llama_context, i: i32) -> llama_token {
    sampled_getter("llama_get_sampled_token_ith", ctx, LLAMA_TOKEN_NULL, LLAMA_TOKEN_NULL)
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_probs_ith(ctx: *mut llama_context, i: i32) -> *mut f32 {
    sampled_getter("llama_get_sampled_probs_ith", ctx, ptr::null_mut(), ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_probs_count_ith(ctx: *mut llama_context, i: i32) -> u32 {
    sampled_getter("llama_get_sampled_probs_count_ith", ctx, 0, 0)
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_logits_ith(ctx: *mut llama_context, i: i32) -> *mut f32 {
    sampled_getter("llama_get_sampled_logits_ith", ctx, ptr::null_mut(), ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_logits_count_ith(ctx: *mut llama_context, i: i32) -> u32 {
    sampled_getter("llama_get_sampled_logits_count_ith", ctx, 0, 0)
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_candidates_ith(ctx: *mut llama_context, i: i32) -> *mut llama_token {
    sampled_getter("llama_get_sampled_candidates_ith", ctx, ptr::null_mut(), ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn llama_get_sampled_candidates_count_ith(ctx: *mut llama_context, i: i32) -> u32 {
    sampled_getter("llama_get_sampled_candidates_count_ith", ctx, 0, 0)
}

#[no_mangle]
pub extern "C" fn llama_set_sampler(ctx: *mut llama_context, seq_id: llama_seq_id, smpl: *mut llama_sampler) -> bool {
    guard("llama_set_sampler", false, || {
        super::context::ctx_ref(ctx)?;
        Err(Error::invalid(
            "backend sampling is not supported: minfer samples on the host; sample with llama_sampler_sample",
        ))
    })
}

// ---------------------------------------------------------------------------
// Built-in samplers: a `llama_sampler` whose iface is BUILTIN_I and whose ctx
// is a `Box<Box<dyn Sampler>>` (crate::sampling). A caller's own sampler
// (llama_sampler_init) keeps its iface and ctx; a chain holds either kind as
// a `Handle` and calls a caller's sampler through its function table.
// ---------------------------------------------------------------------------

static BUILTIN_I: llama_sampler_i = llama_sampler_i {
    name: Some(builtin_name),
    accept: Some(builtin_accept),
    apply: Some(builtin_apply),
    reset: Some(builtin_reset),
    clone: Some(builtin_clone),
    free: Some(builtin_free),
    backend_init: None,
    backend_accept: None,
    backend_apply: None,
    backend_set_input: None,
    backend_reset: None,
    copy_state: None,
};

fn builtin_iface() -> *mut llama_sampler_i {
    // Never written through: C code only reads a sampler's function table.
    ptr::addr_of!(BUILTIN_I).cast_mut()
}

/// A new handle owning a built-in sampler.
fn new_handle(inner: Box<dyn Sampler>) -> *mut llama_sampler {
    let ctx = Box::into_raw(Box::new(inner)).cast::<c_void>();
    Box::into_raw(Box::new(llama_sampler { iface: builtin_iface(), ctx }))
}

/// The Rust sampler behind a built-in handle (None for NULL or a caller's own).
///
/// SAFETY contract: `smpl` is NULL or a live sampler handle.
unsafe fn inner<'a>(smpl: *const llama_sampler) -> Option<&'a mut Box<dyn Sampler>> {
    // SAFETY: per the contract; a built-in's ctx is the Box<Box<dyn Sampler>> of new_handle.
    unsafe {
        let s = smpl.as_ref()?;
        if s.iface != builtin_iface() || s.ctx.is_null() {
            return None;
        }
        Some(&mut *s.ctx.cast::<Box<dyn Sampler>>())
    }
}

/// The chain behind a handle, or an error naming what it is instead.
fn chain_of<'a>(chain: *const llama_sampler) -> Result<&'a mut Chain> {
    if chain.is_null() {
        return Err(Error::invalid("chain is NULL"));
    }
    // SAFETY: non-NULL handle from the caller.
    unsafe { inner(chain) }
        .and_then(|s| s.as_any_mut().downcast_mut::<Chain>())
        .ok_or_else(|| Error::invalid("the sampler is not a chain made by llama_sampler_chain_init"))
}

// The sampler core's `TokenData` is viewed in place of the caller's
// `llama_token_data` (no copy: `with_candidates`, `Handle::apply`), so the
// two layouts must agree field for field.
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<TokenData>() == size_of::<llama_token_data>());
    assert!(align_of::<TokenData>() == align_of::<llama_token_data>());
    assert!(offset_of!(TokenData, id) == offset_of!(llama_token_data, id));
    assert!(offset_of!(TokenData, logit) == offset_of!(llama_token_data, logit));
    assert!(offset_of!(TokenData, p) == offset_of!(llama_token_data, p));
};

/// Runs `f` over the C candidates array as a `Candidates`, then writes the
/// (possibly moved or shrunk) array back.
///
/// SAFETY contract: `cur_p` is NULL or points to a valid array whose `data`
/// holds `size` elements.
unsafe fn with_candidates(cur_p: *mut llama_token_data_array, f: impl FnOnce(&mut Candidates<'_>)) -> Result<()> {
    // SAFETY: per the contract.
    let arr = unsafe { cur_p.as_mut() }.ok_or_else(|| Error::invalid("cur_p is NULL"))?;
    if arr.size > 0 && arr.data.is_null() {
        return Err(Error::invalid("cur_p->data is NULL with a non-zero size"));
    }
    let data: &mut [TokenData] = if arr.size == 0 {
        &mut []
    } else {
        // SAFETY: TokenData has llama_token_data's layout; data holds size elements.
        unsafe { std::slice::from_raw_parts_mut(arr.data.cast::<TokenData>(), arr.size) }
    };
    let mut cur = Candidates { data, selected: arr.selected, sorted: arr.sorted };
    f(&mut cur);
    if !cur.data.is_empty() {
        arr.data = cur.data.as_mut_ptr().cast::<llama_token_data>();
    }
    arr.size = cur.data.len();
    arr.selected = cur.selected;
    arr.sorted = cur.sorted;
    Ok(())
}

unsafe extern "C" fn builtin_name(smpl: *const llama_sampler) -> *const c_char {
    // SAFETY: called through BUILTIN_I, so smpl is a built-in handle.
    match unsafe { inner(smpl) } {
        Some(s) => s.name().as_ptr(),
        None => c"(null)".as_ptr(),
    }
}

unsafe extern "C" fn builtin_accept(smpl: *mut llama_sampler, token: llama_token) {
    guard("llama_sampler_accept", (), || {
        // SAFETY: called through BUILTIN_I.
        if let Some(s) = unsafe { inner(smpl) } {
            s.accept(token);
        }
        Ok(())
    })
}

unsafe extern "C" fn builtin_apply(smpl: *mut llama_sampler, cur_p: *mut llama_token_data_array) {
    guard("llama_sampler_apply", (), || {
        // SAFETY: called through BUILTIN_I, so smpl is a live handle (inner checks its iface).
        let s = unsafe { inner(smpl) }.ok_or_else(|| Error::invalid("not a built-in sampler"))?;
        // SAFETY: cur_p is NULL or the caller's valid array (llama_sampler_apply's contract).
        unsafe { with_candidates(cur_p, |c| s.apply(c)) }
    })
}

unsafe extern "C" fn builtin_reset(smpl: *mut llama_sampler) {
    guard("llama_sampler_reset", (), || {
        // SAFETY: called through BUILTIN_I.
        if let Some(s) = unsafe { inner(smpl) } {
            s.reset();
        }
        Ok(())
    })
}

unsafe extern "C" fn builtin_clone(smpl: *const llama_sampler) -> *mut llama_sampler {
    guard("llama_sampler_clone", ptr::null_mut(), || {
        // SAFETY: called through BUILTIN_I.
        let s = unsafe { inner(smpl) }.ok_or_else(|| Error::invalid("not a built-in sampler"))?;
        Ok(new_handle(s.clone_box()?))
    })
}

unsafe extern "C" fn builtin_free(smpl: *mut llama_sampler) {
    guard("llama_sampler_free", (), || {
        // SAFETY: called through BUILTIN_I; ctx is ours and freed once (ctx is
        // cleared so a second call is harmless).
        unsafe {
            if let Some(s) = smpl.as_mut() {
                if !s.ctx.is_null() {
                    drop(Box::from_raw(s.ctx.cast::<Box<dyn Sampler>>()));
                    s.ctx = ptr::null_mut();
                }
            }
        }
        Ok(())
    })
}

/// A chain's element: a sampler handle the chain owns (freed with it).
struct Handle {
    ptr: *mut llama_sampler,
}

impl Handle {
    /// Gives the handle back to the caller (the chain no longer owns it).
    fn release(self) -> *mut llama_sampler {
        let p = self.ptr;
        std::mem::forget(self);
        p
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        free_sampler(self.ptr);
    }
}

impl Sampler for Handle {
    fn name(&self) -> &'static CStr {
        c"(handle)"
    }
    fn accept(&mut self, token: i32) {
        accept_sampler(self.ptr, token);
    }
    fn apply(&mut self, cur: &mut Candidates<'_>) {
        // SAFETY: the chain owns a live handle.
        if let Some(s) = unsafe { inner(self.ptr) } {
            s.apply(cur);
            return;
        }
        // a caller's own sampler: through its function table
        // SAFETY: a live handle; its iface is the caller's table.
        let Some(apply) = (unsafe { self.ptr.as_ref().and_then(|s| s.iface.as_ref()).and_then(|i| i.apply) }) else {
            return; // the reference's chain skips samplers without apply
        };
        let orig = cur.data.as_mut_ptr();
        let mut arr = llama_token_data_array {
            data: orig.cast::<llama_token_data>(),
            size: cur.data.len(),
            selected: cur.selected,
            sorted: cur.sorted,
        };
        // SAFETY: the caller's callback gets a valid array, as with the reference.
        unsafe { apply(self.ptr, &mut arr) };
        let data: &mut [TokenData] = if arr.size == 0 || arr.data.is_null() {
            &mut []
        } else {
            // SAFETY: the callback left `data` pointing at `size` elements
            // (within the caller's array, or its own buffer), as the C API requires.
            unsafe { std::slice::from_raw_parts_mut(arr.data.cast::<TokenData>(), arr.size) }
        };
        cur.data = data;
        cur.selected = arr.selected;
        cur.sorted = arr.sorted;
    }
    fn reset(&mut self) {
        reset_sampler(self.ptr);
    }
    fn clone_box(&self) -> Result<Box<dyn Sampler>> {
        let p = clone_sampler(self.ptr)?;
        Ok(Box::new(Handle { ptr: p }))
    }
    fn seed(&self) -> u32 {
        seed_of(self.ptr)
    }
    fn copy_state_from(&mut self, src: &dyn Sampler) -> bool {
        match src.as_any().downcast_ref::<Handle>() {
            Some(h) => copy_sampler(h.ptr, self.ptr).is_ok(),
            None => false,
        }
    }
    crate::sampler_any!();
}

fn iface_of<'a>(smpl: *const llama_sampler) -> Option<&'a llama_sampler_i> {
    // SAFETY: a live handle (or NULL); its iface is a table that outlives it.
    unsafe { smpl.as_ref().and_then(|s| s.iface.as_ref()) }
}

fn accept_sampler(smpl: *mut llama_sampler, token: llama_token) {
    if let Some(f) = iface_of(smpl).and_then(|i| i.accept) {
        // SAFETY: the sampler's own callback with its own handle.
        unsafe { f(smpl, token) };
    }
}

fn reset_sampler(smpl: *mut llama_sampler) {
    if let Some(f) = iface_of(smpl).and_then(|i| i.reset) {
        // SAFETY: the sampler's own callback with its own handle.
        unsafe { f(smpl) };
    }
}

fn free_sampler(smpl: *mut llama_sampler) {
    if smpl.is_null() {
        return;
    }
    if let Some(f) = iface_of(smpl).and_then(|i| i.free) {
        // SAFETY: the sampler's own callback with its own handle.
        unsafe { f(smpl) };
    }
    // SAFETY: every llama_sampler struct is allocated by this library
    // (llama_sampler_init or a built-in constructor) as a Box.
    drop(unsafe { Box::from_raw(smpl) });
}

fn clone_sampler(smpl: *const llama_sampler) -> Result<*mut llama_sampler> {
    // SAFETY: a live handle.
    let s = unsafe { smpl.as_ref() }.ok_or_else(|| Error::invalid("smpl is NULL"))?;
    if let Some(f) = iface_of(smpl).and_then(|i| i.clone) {
        // SAFETY: the sampler's own callback with its own handle.
        let p = unsafe { f(smpl) };
        if p.is_null() {
            return Err(Error::invalid("the sampler's clone callback returned NULL"));
        }
        return Ok(p);
    }
    if s.ctx.is_null() {
        return Ok(Box::into_raw(Box::new(llama_sampler { iface: s.iface, ctx: ptr::null_mut() })));
    }
    Err(Error::invalid("the sampler does not support cloning (no clone callback and a non-NULL ctx)"))
}

fn seed_of(smpl: *const llama_sampler) -> u32 {
    // SAFETY: a live handle or NULL.
    match unsafe { inner(smpl) } {
        Some(s) => s.seed(),
        None => LLAMA_DEFAULT_SEED,
    }
}

fn copy_sampler(src: *const llama_sampler, dst: *mut llama_sampler) -> Result<()> {
    if src.is_null() || dst.is_null() || ptr::eq(src, dst) {
        return Ok(());
    }
    // SAFETY: live handles.
    let (s, d) = unsafe { (&*src, &mut *dst) };
    if s.iface != d.iface {
        return Err(Error::invalid("cannot copy between different sampler types"));
    }
    // SAFETY: live handles.
    if let (Some(si), Some(di)) = unsafe { (inner(src), inner(dst)) } {
        if (**si).as_any().type_id() != (**di).as_any().type_id() {
            return Err(Error::invalid("cannot copy between different sampler types"));
        }
        if !di.copy_state_from(&**si) {
            *di = si.clone_box()?;
        }
        return Ok(());
    }
    if let Some(f) = iface_of(dst).and_then(|i| i.copy_state) {
        // SAFETY: the sampler's own callback.
        unsafe { f(src, dst) };
        return Ok(());
    }
    // a temporary clone of src; dst's old state is freed and tmp's moved in
    let tmp = clone_sampler(src)?;
    if let Some(f) = iface_of(dst).and_then(|i| i.free) {
        // SAFETY: the sampler's own callback frees only its ctx.
        unsafe { f(dst) };
    }
    // SAFETY: tmp is a fresh Box-allocated handle from clone_sampler.
    let tmp = unsafe { Box::from_raw(tmp) };
    d.ctx = tmp.ctx;
    Ok(())
}

// ---------------------------------------------------------------------------
// The vocabulary, as the vocabulary-dependent samplers (grammar, infill, DRY
// breakers) see it: through the vocab C API (llama_token_to_piece,
// llama_vocab_is_eog, llama_tokenize, llama_detokenize), pieces cached at
// construction as the reference caches them. While the tokenizer is not in
// the library, those calls fail and the constructors say so.
// ---------------------------------------------------------------------------

use super::vocab::{
    llama_detokenize, llama_token_to_piece, llama_tokenize, llama_vocab_eos, llama_vocab_eot, llama_vocab_is_eog,
    llama_vocab_n_tokens,
};
use crate::sampling::VocabView;
use std::borrow::Cow;
use std::sync::Arc;

/// A token's piece through the C API, appended to `out`; false when the
/// call fails.
fn c_piece_into(vocab: *const llama_vocab, token: i32, special: bool, out: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 256];
    let n = llama_token_to_piece(vocab, token, buf.as_mut_ptr().cast(), buf.len() as i32, 0, special);
    if n >= 0 {
        out.extend_from_slice(&buf[..n as usize]);
        return true;
    }
    if n == -1 {
        return false; // cannot mean "1 byte needed" with 256 bytes: a failure
    }
    // a longer piece: -n bytes needed
    let mut big = vec![0u8; n.unsigned_abs() as usize];
    let n = llama_token_to_piece(vocab, token, big.as_mut_ptr().cast(), big.len() as i32, 0, special);
    if n < 0 {
        return false;
    }
    out.extend_from_slice(&big[..n as usize]);
    true
}

/// A token's piece through the C API; None when the call fails.
fn c_piece(vocab: *const llama_vocab, token: i32, special: bool) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    c_piece_into(vocab, token, special, &mut out).then_some(out)
}

fn c_tokenize(vocab: *const llama_vocab, text: &[u8], parse_special: bool) -> Vec<i32> {
    let Ok(len) = i32::try_from(text.len()) else { return Vec::new() };
    let mut out = vec![0i32; text.len() + 2];
    let mut n =
        llama_tokenize(vocab, text.as_ptr().cast(), len, out.as_mut_ptr(), out.len() as i32, false, parse_special);
    if n < 0 && n != i32::MIN {
        out.resize(n.unsigned_abs() as usize, 0);
        n = llama_tokenize(vocab, text.as_ptr().cast(), len, out.as_mut_ptr(), out.len() as i32, false, parse_special);
    }
    out.truncate(n.max(0) as usize);
    out
}

/// The vocabulary of a `llama_vocab` handle, with the pieces one sampler
/// needs cached (`special` chooses which: grammar pieces are special = true,
/// infill's are special = false).
struct CVocab {
    ptr: usize, // the handle (outlives the sampler, as with the reference)
    special: bool,
    /// All pieces back to back; token t is bytes[offs[t]..offs[t + 1]].
    bytes: Vec<u8>,
    offs: Vec<u32>,
    eog: Vec<bool>,
    eot: i32,
    eos: i32,
}

impl CVocab {
    fn new(vocab: *const llama_vocab, special: bool) -> Result<CVocab> {
        if vocab.is_null() {
            return Err(Error::invalid("vocab is NULL"));
        }
        let n = llama_vocab_n_tokens(vocab);
        if n <= 0 {
            return Err(Error::invalid("the vocabulary has no tokens"));
        }
        let mut bytes = Vec::new();
        let mut offs = Vec::with_capacity(n as usize + 1);
        let mut eog = Vec::with_capacity(n as usize);
        offs.push(0u32);
        for t in 0..n {
            if !c_piece_into(vocab, t, special, &mut bytes) {
                return Err(Error::NotImplemented("token pieces of the vocabulary (llama_token_to_piece)"));
            }
            offs.push(u32::try_from(bytes.len()).map_err(|_| Error::invalid("vocabulary pieces over 4 GiB"))?);
            eog.push(llama_vocab_is_eog(vocab, t));
        }
        Ok(CVocab {
            ptr: vocab as usize,
            special,
            bytes,
            offs,
            eog,
            eot: llama_vocab_eot(vocab),
            eos: llama_vocab_eos(vocab),
        })
    }

    fn handle(&self) -> *const llama_vocab {
        self.ptr as *const llama_vocab
    }
}

impl VocabView for CVocab {
    fn n_tokens(&self) -> usize {
        self.eog.len()
    }
    fn piece(&self, token: i32, special: bool) -> Cow<'_, [u8]> {
        if special == self.special {
            if let Some(t) = usize::try_from(token).ok().filter(|&t| t < self.eog.len()) {
                return Cow::Borrowed(&self.bytes[self.offs[t] as usize..self.offs[t + 1] as usize]);
            }
        }
        Cow::Owned(c_piece(self.handle(), token, special).unwrap_or_default())
    }
    fn is_eog(&self, token: i32) -> bool {
        usize::try_from(token).ok().and_then(|t| self.eog.get(t)).copied().unwrap_or(false)
    }
    fn token_eot(&self) -> i32 {
        self.eot
    }
    fn token_eos(&self) -> i32 {
        self.eos
    }
    fn tokenize(&self, text: &[u8]) -> Vec<i32> {
        c_tokenize(self.handle(), text, false)
    }
    fn tokenize_special(&self, text: &[u8]) -> Vec<i32> {
        c_tokenize(self.handle(), text, true)
    }
    fn detokenize_one(&self, token: i32) -> Vec<u8> {
        let mut buf = vec![0u8; 256];
        let mut n = llama_detokenize(self.handle(), &token, 1, buf.as_mut_ptr().cast(), buf.len() as i32, false, true);
        if n < 0 {
            buf.resize(n.unsigned_abs() as usize, 0);
            n = llama_detokenize(self.handle(), &token, 1, buf.as_mut_ptr().cast(), buf.len() as i32, false, true);
        }
        buf.truncate(n.max(0) as usize);
        buf
    }
}

// ---------------------------------------------------------------------------
// The llama_sampler API
// ---------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn llama_sampler_init(iface: *mut llama_sampler_i, ctx: llama_sampler_context_t) -> *mut llama_sampler {
    guard("llama_sampler_init", ptr::null_mut(), || {
        if iface.is_null() {
            return Err(Error::invalid("iface is NULL"));
        }
        Ok(Box::into_raw(Box::new(llama_sampler { iface, ctx })))
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_name(smpl: *const llama_sampler) -> *const c_char {
    guard("llama_sampler_name", ptr::null(), || {
        deref(smpl, "smpl")?;
        match iface_of(smpl).and_then(|i| i.name) {
            // SAFETY: the sampler's own callback with its own handle.
            Some(f) => Ok(unsafe { f(smpl) }),
            None => Ok(c"(null)".as_ptr()),
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_accept(smpl: *mut llama_sampler, token: llama_token) {
    guard("llama_sampler_accept", (), || {
        accept_sampler(smpl, token);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_apply(smpl: *mut llama_sampler, cur_p: *mut llama_token_data_array) {
    guard("llama_sampler_apply", (), || {
        if smpl.is_null() {
            return Ok(());
        }
        if cur_p.is_null() {
            return Err(Error::invalid("cur_p is NULL"));
        }
        let f =
            iface_of(smpl).and_then(|i| i.apply).ok_or_else(|| Error::invalid("the sampler has no apply callback"))?;
        // SAFETY: the sampler's own callback with its handle and the caller's array.
        unsafe { f(smpl, cur_p) };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_reset(smpl: *mut llama_sampler) {
    guard("llama_sampler_reset", (), || {
        reset_sampler(smpl);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_clone(smpl: *const llama_sampler) -> *mut llama_sampler {
    guard("llama_sampler_clone", ptr::null_mut(), || {
        if smpl.is_null() {
            return Ok(ptr::null_mut());
        }
        clone_sampler(smpl)
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_copy(src: *const llama_sampler, dst: *mut llama_sampler) {
    guard("llama_sampler_copy", (), || copy_sampler(src, dst))
}

#[no_mangle]
pub extern "C" fn llama_sampler_free(smpl: *mut llama_sampler) {
    guard("llama_sampler_free", (), || {
        free_sampler(smpl);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_init(params: llama_sampler_chain_params) -> *mut llama_sampler {
    guard("llama_sampler_chain_init", ptr::null_mut(), || Ok(new_handle(Box::new(Chain::new(params.no_perf)))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_add(chain: *mut llama_sampler, smpl: *mut llama_sampler) {
    guard("llama_sampler_chain_add", (), || {
        let c = chain_of(chain)?;
        if smpl.is_null() {
            return Err(Error::invalid("smpl is NULL"));
        }
        if ptr::eq(chain, smpl) {
            return Err(Error::invalid("a chain cannot contain itself"));
        }
        c.samplers.push(Box::new(Handle { ptr: smpl }));
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_get(chain: *mut llama_sampler, i: i32) -> *mut llama_sampler {
    guard("llama_sampler_chain_get", ptr::null_mut(), || {
        if chain.is_null() {
            return Ok(ptr::null_mut());
        }
        // SAFETY: a live handle.
        let Some(c) = (unsafe { inner(chain) }).and_then(|s| s.as_any_mut().downcast_mut::<Chain>()) else {
            return Ok(ptr::null_mut()); // not a chain
        };
        if i == -1 {
            return Ok(chain);
        }
        if i < 0 || i as usize >= c.samplers.len() {
            return Ok(ptr::null_mut());
        }
        Ok(c.samplers[i as usize].as_any().downcast_ref::<Handle>().map_or(ptr::null_mut(), |h| h.ptr))
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_n(chain: *const llama_sampler) -> i32 {
    guard("llama_sampler_chain_n", -1, || Ok(chain_of(chain)?.samplers.len() as i32))
}

#[no_mangle]
pub extern "C" fn llama_sampler_chain_remove(chain: *mut llama_sampler, i: i32) -> *mut llama_sampler {
    guard("llama_sampler_chain_remove", ptr::null_mut(), || {
        let c = chain_of(chain)?;
        if i < 0 || i as usize >= c.samplers.len() {
            return Ok(ptr::null_mut());
        }
        let item = c.samplers.remove(i as usize);
        match item.into_any().downcast::<Handle>() {
            Ok(h) => Ok(h.release()),
            Err(_) => Err(Error::invalid("chain element is not a handle")),
        }
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_greedy() -> *mut llama_sampler {
    guard("llama_sampler_init_greedy", ptr::null_mut(), || Ok(new_handle(Box::new(basic::Greedy))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_dist(seed: u32) -> *mut llama_sampler {
    guard("llama_sampler_init_dist", ptr::null_mut(), || Ok(new_handle(Box::new(basic::Dist::new(seed)))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_top_k(k: i32) -> *mut llama_sampler {
    guard("llama_sampler_init_top_k", ptr::null_mut(), || Ok(new_handle(basic::top_k(k))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_top_p(p: f32, min_keep: usize) -> *mut llama_sampler {
    guard("llama_sampler_init_top_p", ptr::null_mut(), || Ok(new_handle(basic::top_p(p, min_keep))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_min_p(p: f32, min_keep: usize) -> *mut llama_sampler {
    guard("llama_sampler_init_min_p", ptr::null_mut(), || Ok(new_handle(basic::min_p(p, min_keep))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_typical(p: f32, min_keep: usize) -> *mut llama_sampler {
    guard("llama_sampler_init_typical", ptr::null_mut(), || Ok(new_handle(basic::typical(p, min_keep))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_temp(t: f32) -> *mut llama_sampler {
    guard("llama_sampler_init_temp", ptr::null_mut(), || Ok(new_handle(basic::temp(t))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_temp_ext(t: f32, delta: f32, exponent: f32) -> *mut llama_sampler {
    guard("llama_sampler_init_temp_ext", ptr::null_mut(), || Ok(new_handle(basic::temp_ext(t, delta, exponent))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_xtc(p: f32, t: f32, min_keep: usize, seed: u32) -> *mut llama_sampler {
    guard("llama_sampler_init_xtc", ptr::null_mut(), || Ok(new_handle(basic::xtc(p, t, min_keep, seed))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_top_n_sigma(n: f32) -> *mut llama_sampler {
    guard("llama_sampler_init_top_n_sigma", ptr::null_mut(), || Ok(new_handle(basic::top_n_sigma(n))))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_mirostat(
    n_vocab: i32,
    seed: u32,
    tau: f32,
    eta: f32,
    m: i32,
) -> *mut llama_sampler {
    guard("llama_sampler_init_mirostat", ptr::null_mut(), || {
        Ok(new_handle(Box::new(mirostat::Mirostat::new(n_vocab, seed, tau, eta, m))))
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_mirostat_v2(seed: u32, tau: f32, eta: f32) -> *mut llama_sampler {
    guard("llama_sampler_init_mirostat_v2", ptr::null_mut(), || {
        Ok(new_handle(Box::new(mirostat::MirostatV2::new(seed, tau, eta))))
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_grammar(
    vocab: *const llama_vocab,
    grammar_str: *const c_char,
    grammar_root: *const c_char,
) -> *mut llama_sampler {
    guard("llama_sampler_init_grammar", ptr::null_mut(), || {
        init_grammar(vocab, grammar_str, grammar_root, false, &[], ptr::null(), 0)
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_grammar_lazy(
    vocab: *const llama_vocab,
    grammar_str: *const c_char,
    grammar_root: *const c_char,
    trigger_words: *mut *const c_char,
    num_trigger_words: usize,
    trigger_tokens: *const llama_token,
    num_trigger_tokens: usize,
) -> *mut llama_sampler {
    guard("llama_sampler_init_grammar_lazy", ptr::null_mut(), || {
        // the deprecated trigger words become one pattern, as in the reference
        let words = c_strings(trigger_words, num_trigger_words, "trigger_words")?;
        let words: Vec<&[u8]> = words.iter().map(|w| w.to_bytes()).collect();
        let pattern = if words.is_empty() { None } else { Some(grammar::trigger_words_pattern(&words)) };
        init_grammar(vocab, grammar_str, grammar_root, true, pattern.as_slice(), trigger_tokens, num_trigger_tokens)
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_grammar_lazy_patterns(
    vocab: *const llama_vocab,
    grammar_str: *const c_char,
    grammar_root: *const c_char,
    trigger_patterns: *mut *const c_char,
    num_trigger_patterns: usize,
    trigger_tokens: *const llama_token,
    num_trigger_tokens: usize,
) -> *mut llama_sampler {
    guard("llama_sampler_init_grammar_lazy_patterns", ptr::null_mut(), || {
        let patterns = c_strings(trigger_patterns, num_trigger_patterns, "trigger_patterns")?;
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        init_grammar(vocab, grammar_str, grammar_root, true, &patterns, trigger_tokens, num_trigger_tokens)
    })
}

/// `n` C strings from a caller's array (NULL with n == 0 is fine).
fn c_strings<'a>(list: *mut *const c_char, n: usize, what: &str) -> Result<Vec<&'a CStr>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        return Err(Error::invalid(format!("{what} is NULL with a count of {n}")));
    }
    // SAFETY: the caller passes n string pointers.
    let ptrs = unsafe { std::slice::from_raw_parts(list, n) };
    ptrs.iter().enumerate().map(|(i, &p)| c_str(p, &format!("{what}[{i}]"))).collect()
}

/// The grammar constructors: an empty or NULL grammar string gives the
/// reference's inactive grammar sampler (a no-op); otherwise the grammar is
/// parsed (a malformed one fails with its line and column), checked (root,
/// left recursion), the trigger patterns compiled, and the sampler reads the
/// vocabulary's token pieces.
fn init_grammar(
    vocab: *const llama_vocab,
    grammar_str: *const c_char,
    grammar_root: *const c_char,
    lazy: bool,
    patterns: &[String],
    trigger_tokens: *const llama_token,
    num_trigger_tokens: usize,
) -> Result<*mut llama_sampler> {
    let text = if grammar_str.is_null() { &[][..] } else { c_str(grammar_str, "grammar_str")?.to_bytes() };
    if text.is_empty() {
        return Ok(new_handle(Box::new(grammar::Inactive)));
    }
    let root = if grammar_root.is_null() {
        "root".to_string()
    } else {
        c_str(grammar_root, "grammar_root")?.to_string_lossy().into_owned()
    };
    let tokens: Vec<i32> = if num_trigger_tokens == 0 {
        Vec::new()
    } else if trigger_tokens.is_null() {
        return Err(Error::invalid("trigger_tokens is NULL with a count > 0"));
    } else {
        // SAFETY: the caller passes num_trigger_tokens tokens.
        unsafe { std::slice::from_raw_parts(trigger_tokens, num_trigger_tokens) }.to_vec()
    };
    // parse and check before touching the vocabulary, so that a malformed
    // grammar is reported as such (`<text>` token references need it)
    match grammar::parser::parse(text) {
        Ok(parsed) => {
            grammar::matcher::Grammar::new(&parsed, &root, false, Vec::new())
                .map_err(|e| Error::invalid(e.to_string()))?;
        }
        Err(e) if !vocab.is_null() && e.message.starts_with("no vocab to parse token") => {}
        Err(e) => return Err(Error::invalid(format!("failed to parse grammar: {e}"))),
    }
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    grammar::compile_patterns(&patterns)?;
    let v = Arc::new(CVocab::new(vocab, true)?);
    let g = grammar::GrammarSampler::with_patterns(v, text, &root, lazy, tokens, &patterns)?;
    Ok(new_handle(Box::new(g)))
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_penalties(
    n_vocab: i32,
    penalty_last_n: i32,
    penalty_repeat: f32,
    penalty_freq: f32,
    penalty_present: f32,
) -> *mut llama_sampler {
    guard("llama_sampler_init_penalties", ptr::null_mut(), || {
        Ok(new_handle(penalties::penalties(n_vocab, penalty_last_n, penalty_repeat, penalty_freq, penalty_present)))
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_dry(
    vocab: *const llama_vocab,
    dry_multiplier: f32,
    dry_base: f32,
    dry_allowed_length: i32,
    dry_penalty_last_n: i32,
    seq_breakers: *mut *const c_char,
    num_breakers: usize,
) -> *mut llama_sampler {
    guard("llama_sampler_init_dry", ptr::null_mut(), || {
        let last_n = dry_penalty_last_n.max(0);
        let mut breakers = penalties::Breakers::new();
        if penalties::dry_enabled(dry_multiplier, dry_base, last_n) && !seq_breakers.is_null() && num_breakers > 0 {
            // SAFETY: the caller passes num_breakers string pointers.
            let list = unsafe { std::slice::from_raw_parts(seq_breakers, num_breakers) };
            let mut view: Option<CVocabLite> = None;
            for (i, &b) in list.iter().enumerate() {
                // SAFETY: each entry is NULL or a C string.
                if b.is_null() || unsafe { *b } == 0 {
                    log_warn!("skipping null or empty DRY sequence breaker at index {i}");
                    continue;
                }
                let mut text = c_str(b, "seq_breakers[i]")?.to_bytes().to_vec();
                if text.len() > penalties::DRY_MAX_CHAR_LEN {
                    log_warn!("truncating DRY sequence breaker to {} characters", penalties::DRY_MAX_CHAR_LEN);
                    text.truncate(penalties::DRY_MAX_CHAR_LEN);
                }
                if view.is_none() {
                    view = Some(CVocabLite::new(vocab)?);
                }
                if let Some(v) = &view {
                    penalties::dry_breaker_sequences(v, &text, &mut breakers, penalties::DRY_MAX_SEQ_LEN);
                }
            }
        }
        Ok(new_handle(penalties::dry(dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, breakers)))
    })
}

/// The vocabulary for DRY's breaker scan: no cache, just the C calls.
struct CVocabLite {
    ptr: *const llama_vocab,
    n: usize,
}

impl CVocabLite {
    fn new(vocab: *const llama_vocab) -> Result<CVocabLite> {
        if vocab.is_null() {
            return Err(Error::invalid("vocab is NULL (sequence breakers are tokenized with it)"));
        }
        let n = llama_vocab_n_tokens(vocab);
        if n <= 0 {
            return Err(Error::invalid("the vocabulary has no tokens"));
        }
        // the tokenizer must be there: probe one piece
        c_piece(vocab, 0, true).ok_or(Error::NotImplemented("DRY sequence breakers (they need the tokenizer)"))?;
        Ok(CVocabLite { ptr: vocab, n: n as usize })
    }
}

impl VocabView for CVocabLite {
    fn n_tokens(&self) -> usize {
        self.n
    }
    fn piece(&self, token: i32, special: bool) -> Cow<'_, [u8]> {
        Cow::Owned(c_piece(self.ptr, token, special).unwrap_or_default())
    }
    fn is_eog(&self, token: i32) -> bool {
        llama_vocab_is_eog(self.ptr, token)
    }
    fn token_eot(&self) -> i32 {
        llama_vocab_eot(self.ptr)
    }
    fn token_eos(&self) -> i32 {
        llama_vocab_eos(self.ptr)
    }
    fn tokenize(&self, text: &[u8]) -> Vec<i32> {
        c_tokenize(self.ptr, text, false)
    }
    fn detokenize_one(&self, token: i32) -> Vec<u8> {
        let mut buf = vec![0u8; 256];
        let mut n = llama_detokenize(self.ptr, &token, 1, buf.as_mut_ptr().cast(), buf.len() as i32, false, true);
        if n < 0 {
            buf.resize(n.unsigned_abs() as usize, 0);
            n = llama_detokenize(self.ptr, &token, 1, buf.as_mut_ptr().cast(), buf.len() as i32, false, true);
        }
        buf.truncate(n.max(0) as usize);
        buf
    }
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_adaptive_p(target: f32, decay: f32, seed: u32) -> *mut llama_sampler {
    guard("llama_sampler_init_adaptive_p", ptr::null_mut(), || {
        Ok(new_handle(Box::new(adaptive::AdaptiveP::new(target, decay, seed))))
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_logit_bias(
    n_vocab: i32,
    n_logit_bias: i32,
    logit_bias: *const llama_logit_bias,
) -> *mut llama_sampler {
    guard("llama_sampler_init_logit_bias", ptr::null_mut(), || {
        let biases = if n_logit_bias <= 0 {
            Vec::new()
        } else {
            if logit_bias.is_null() {
                return Err(Error::invalid("logit_bias is NULL with n_logit_bias > 0"));
            }
            // SAFETY: the caller passes n_logit_bias entries.
            let s = unsafe { std::slice::from_raw_parts(logit_bias, n_logit_bias as usize) };
            s.iter().map(|b| penalties::Bias { token: b.token, bias: b.bias }).collect()
        };
        Ok(new_handle(penalties::logit_bias(n_vocab, biases)))
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_init_infill(vocab: *const llama_vocab) -> *mut llama_sampler {
    guard("llama_sampler_init_infill", ptr::null_mut(), || {
        let v = Arc::new(CVocab::new(vocab, false)?);
        Ok(new_handle(Box::new(crate::sampling::infill::Infill { vocab: v })))
    })
}

#[no_mangle]
pub extern "C" fn llama_sampler_get_seed(smpl: *const llama_sampler) -> u32 {
    guard("llama_sampler_get_seed", LLAMA_DEFAULT_SEED, || {
        deref(smpl, "smpl")?;
        Ok(seed_of(smpl))
    })
}

// Samples from the logits of output `idx` as the reference does: every
// token of the vocabulary as a candidate (in the chain's reusable buffer
// when `smpl` is a chain), apply, take the selected token, accept it. No
// backend sampler ever runs in this library, so there is no pre-sampled
// token to return.
#[no_mangle]
pub extern "C" fn llama_sampler_sample(smpl: *mut llama_sampler, ctx: *mut llama_context, idx: i32) -> llama_token {
    guard("llama_sampler_sample", LLAMA_TOKEN_NULL, || {
        if smpl.is_null() {
            return Err(Error::invalid("smpl is NULL"));
        }
        let c = super::context::ctx_mut(ctx)?;
        // No backend samplers in minfer: candidates are the logits of output `idx`.
        let logits = c.logits_ith(idx).map_err(|e| Error::invalid(format!("invalid logits id {idx}: {e}")))?;

        // the chain's buffer, taken out while the chain runs
        // SAFETY: smpl is a live handle.
        let mut buf = match unsafe { inner(smpl) }.and_then(|s| s.as_any_mut().downcast_mut::<Chain>()) {
            Some(c) => std::mem::take(&mut c.cur),
            None => Vec::new(),
        };
        buf.clear();
        buf.extend(logits.iter().enumerate().map(|(i, &l)| TokenData { id: i as i32, logit: l, p: 0.0 }));
        let mut arr =
            llama_token_data_array { data: buf.as_mut_ptr().cast(), size: buf.len(), selected: -1, sorted: false };
        let apply =
            iface_of(smpl).and_then(|i| i.apply).ok_or_else(|| Error::invalid("the sampler has no apply callback"))?;
        // SAFETY: the sampler's own callback with its handle and our array.
        unsafe { apply(smpl, &mut arr) };
        // Samplers may point `data` elsewhere; `selected` indexes whatever it is now.
        let token = usize::try_from(arr.selected).ok().filter(|&i| i < arr.size && !arr.data.is_null()).map(|i| {
            // SAFETY: i < size of the array the samplers left in arr.
            unsafe { (*arr.data.add(i)).id }
        });
        // SAFETY: as above.
        if let Some(c) = unsafe { inner(smpl) }.and_then(|s| s.as_any_mut().downcast_mut::<Chain>()) {
            c.cur = buf;
        }
        let token = token.ok_or_else(|| {
            Error::invalid(format!("the sampler selected no token (selected = {}, size = {})", arr.selected, arr.size))
        })?;
        accept_sampler(smpl, token);
        Ok(token)
    })
}

#[no_mangle]
pub extern "C" fn llama_perf_sampler(chain: *const llama_sampler) -> llama_perf_sampler_data {
    guard("llama_perf_sampler", llama_perf_sampler_data::default(), || {
        let c = chain_of(chain)?;
        Ok(llama_perf_sampler_data { t_sample_ms: 1e-3 * c.t_sample_us as f64, n_sample: c.n_sample.max(0) })
    })
}

#[no_mangle]
pub extern "C" fn llama_perf_sampler_print(chain: *const llama_sampler) {
    guard("llama_perf_sampler_print", (), || {
        let c = chain_of(chain)?;
        log_info!(
            "llama_perf_sampler_print:    samplers time = {:10.2} ms / {:5} runs",
            1e-3 * c.t_sample_us as f64,
            c.n_sample.max(0)
        );
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn llama_perf_sampler_reset(chain: *mut llama_sampler) {
    guard("llama_perf_sampler_reset", (), || {
        chain_of(chain)?.perf_reset();
        Ok(())
    })
}
