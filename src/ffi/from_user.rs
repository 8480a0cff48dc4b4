//! `llama_model_init_from_user`: a model from the caller's metadata (a ggml
//! `gguf_context`) and a callback that fills each tensor.
//!
//! Both sides are ggml's structures. The metadata is read through ggml's
//! own gguf functions, which a program that made a `gguf_context` has
//! loaded (found with `dlsym`): `gguf_get_meta_data` gives its key/value
//! pairs as GGUF bytes, `gguf_find_tensor` / `gguf_get_tensor_type` the
//! tensor types it overrides. The callback gets, per tensor, a
//! `struct ggml_tensor` laid out as ggml.h's (type, shape, strides, name,
//! `data` pointing at minfer's buffer for it) whose `buffer` is a
//! `ggml_backend_buffer` with ggml's interface layout, so that
//! `ggml_backend_tensor_set` (what callbacks call) copies into that buffer,
//! as a plain `memcpy` to `tensor->data` does. The tensors, the reference's
//! list for the family (`model::from_user`), are then written with the pairs
//! as one GGUF in an anonymous memory file and loaded as any model.

use super::boundary::*;
use super::types::*;
use crate::error::{Error, Result};
use crate::ggml_type::GgmlType;
use crate::gguf::{GgufFile, GgufWriter};
use std::ffi::{c_char, c_int, c_void};
use std::ptr;

/// ggml.h's `struct ggml_tensor` (GGML_MAX_DIMS 4, GGML_MAX_OP_PARAMS 64,
/// GGML_MAX_SRC 10, GGML_MAX_NAME 64): 336 bytes.
#[repr(C)]
struct GgmlTensor {
    ty: c_int,
    buffer: *mut BackendBuffer,
    ne: [i64; 4],
    nb: [usize; 4],
    op: c_int,
    op_params: [i32; 16],
    flags: i32,
    src: [*mut c_void; 10],
    view_src: *mut GgmlTensor,
    view_offs: usize,
    data: *mut c_void,
    name: [c_char; 64],
    extra: *mut c_void,
    padding: [c_char; 8],
}
const _: () = assert!(std::mem::size_of::<GgmlTensor>() == 336);

type SetTensor = unsafe extern "C" fn(*mut BackendBuffer, *mut GgmlTensor, *const c_void, usize, usize);
type GetTensor = unsafe extern "C" fn(*mut BackendBuffer, *const GgmlTensor, *mut c_void, usize, usize);
type MemsetTensor = unsafe extern "C" fn(*mut BackendBuffer, *mut GgmlTensor, u8, usize, usize);

/// ggml-backend-impl.h's `struct ggml_backend_buffer_i`: the functions
/// minfer's buffer has, the others NULL.
#[repr(C)]
struct BufferIface {
    free_buffer: Option<unsafe extern "C" fn(*mut BackendBuffer)>,
    get_base: Option<unsafe extern "C" fn(*mut BackendBuffer) -> *mut c_void>,
    init_tensor: Option<unsafe extern "C" fn(*mut BackendBuffer, *mut GgmlTensor) -> c_int>,
    memset_tensor: Option<MemsetTensor>,
    set_tensor: Option<SetTensor>,
    get_tensor: Option<GetTensor>,
    set_tensor_2d: Option<unsafe extern "C" fn()>,
    get_tensor_2d: Option<unsafe extern "C" fn()>,
    cpy_tensor: Option<unsafe extern "C" fn()>,
    clear: Option<unsafe extern "C" fn(*mut BackendBuffer, u8)>,
    reset: Option<unsafe extern "C" fn(*mut BackendBuffer)>,
}

/// ggml-backend-impl.h's `struct ggml_backend_buffer`.
#[repr(C)]
struct BackendBuffer {
    iface: BufferIface,
    buft: *mut c_void,
    context: *mut c_void,
    size: usize,
    usage: c_int,
}

/// The bytes `[offset, offset + size)` of `t`'s data, if inside it.
///
/// SAFETY: `t` is one of the tensors `fill` made (its `data` holds
/// `nb[3] * ne[3]` bytes).
unsafe fn data_range(t: *const GgmlTensor, offset: usize, size: usize) -> Option<*mut u8> {
    // SAFETY: the caller's contract: `t` is a live tensor of `fill`.
    let t = unsafe { &*t };
    let nbytes = t.nb[3].checked_mul(usize::try_from(t.ne[3]).ok()?)?;
    if offset.checked_add(size)? > nbytes || t.data.is_null() {
        return None;
    }
    // SAFETY: offset + size lies within the tensor's data.
    Some(unsafe { t.data.cast::<u8>().add(offset) })
}

/// `iface.set_tensor`: what ggml_backend_tensor_set calls.
unsafe extern "C" fn set_tensor(
    _: *mut BackendBuffer,
    t: *mut GgmlTensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: ggml passes a tensor of this buffer (made by `fill`) and a
    // source of `size` bytes; the range is checked against the tensor.
    unsafe {
        if let Some(dst) = data_range(t, offset, size) {
            ptr::copy_nonoverlapping(data.cast::<u8>(), dst, size);
        }
    }
}

/// `iface.get_tensor`: ggml_backend_tensor_get.
unsafe extern "C" fn get_tensor(
    _: *mut BackendBuffer,
    t: *const GgmlTensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: as set_tensor, the other way.
    unsafe {
        if let Some(src) = data_range(t, offset, size) {
            ptr::copy_nonoverlapping(src, data.cast::<u8>(), size);
        }
    }
}

/// `iface.memset_tensor`: ggml_backend_tensor_memset.
unsafe extern "C" fn memset_tensor(_: *mut BackendBuffer, t: *mut GgmlTensor, value: u8, offset: usize, size: usize) {
    // SAFETY: as set_tensor.
    unsafe {
        if let Some(dst) = data_range(t, offset, size) {
            ptr::write_bytes(dst, value, size);
        }
    }
}

/// A gguf function of the process's ggml, by name.
fn ggml_fn(name: &std::ffi::CStr) -> Result<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT only looks the name up.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if f.is_null() {
        return Err(Error::invalid(format!(
            "{} is not loaded in this process: the metadata is a ggml gguf_context, read with ggml's gguf functions",
            name.to_string_lossy()
        )));
    }
    Ok(f)
}

/// The caller's key/value pairs, as a GGUF of no tensors.
fn read_metadata(meta: *mut gguf_context) -> Result<GgufFile> {
    type Size = unsafe extern "C" fn(*const gguf_context) -> usize;
    type Data = unsafe extern "C" fn(*const gguf_context, *mut c_void);
    // SAFETY: ggml's `size_t gguf_get_meta_size(const struct gguf_context *)`
    // and `void gguf_get_meta_data(const struct gguf_context *, void *)`.
    let (size_fn, data_fn) = unsafe {
        (
            std::mem::transmute::<*mut c_void, Size>(ggml_fn(c"gguf_get_meta_size")?),
            std::mem::transmute::<*mut c_void, Data>(ggml_fn(c"gguf_get_meta_data")?),
        )
    };
    // SAFETY: `meta` is the caller's gguf_context; the data call writes
    // exactly the size call's bytes.
    let mut bytes = unsafe {
        let n = size_fn(meta);
        let mut b = vec![0u8; n];
        data_fn(meta, b.as_mut_ptr().cast());
        b
    };
    // (the tensor infos are the caller's type overrides, asked by name
    // below: the header's tensor count set to 0 leaves the pairs alone)
    if let Some(n_tensors) = bytes.get_mut(8..16) {
        n_tensors.fill(0);
    }
    GgufFile::from_bytes(bytes).map_err(|e| Error::model(format!("the metadata: {e}")))
}

/// The type the caller's metadata gives each tensor of `list`, else F32.
fn tensor_types(meta: *mut gguf_context, list: &[crate::model::from_user::UserTensor]) -> Result<Vec<GgmlType>> {
    type Find = unsafe extern "C" fn(*const gguf_context, *const c_char) -> i64;
    type GetType = unsafe extern "C" fn(*const gguf_context, i64) -> c_int;
    // SAFETY: ggml's `int64_t gguf_find_tensor(const struct gguf_context *,
    // const char *)` and `enum ggml_type gguf_get_tensor_type(const struct
    // gguf_context *, int64_t)`.
    let (find, get_type) = unsafe {
        (
            std::mem::transmute::<*mut c_void, Find>(ggml_fn(c"gguf_find_tensor")?),
            std::mem::transmute::<*mut c_void, GetType>(ggml_fn(c"gguf_get_tensor_type")?),
        )
    };
    let type_of = |name: &str| -> Result<GgmlType> {
        let cname = std::ffi::CString::new(name).map_err(|_| Error::invalid("a tensor name with a NUL"))?;
        // SAFETY: the caller's context and a NUL-terminated name.
        let id = unsafe { find(meta, cname.as_ptr()) };
        if id < 0 {
            return Ok(GgmlType::F32);
        }
        // SAFETY: `id` is a tensor of the context.
        let ty = unsafe { get_type(meta, id) };
        u32::try_from(ty)
            .ok()
            .and_then(|t| GgmlType::try_from(t).ok())
            .ok_or_else(|| Error::model(format!("tensor '{name}' has type {ty} in the metadata, not a ggml type")))
    };
    list.iter().map(|t| type_of(&t.name)).collect()
}

/// A tensor made for the caller: name, type, ne, bytes.
type Filled = (String, GgmlType, Vec<u64>, Vec<u8>);

/// Each tensor's bytes, from the caller's callback.
fn fill(
    meta: *mut gguf_context,
    list: &[crate::model::from_user::UserTensor],
    set_tensor_data: unsafe extern "C" fn(*mut ggml_tensor, *mut c_void),
    ud: *mut c_void,
) -> Result<Vec<Filled>> {
    let mut buffer = BackendBuffer {
        iface: BufferIface {
            free_buffer: None,
            get_base: None,
            init_tensor: None,
            memset_tensor: Some(memset_tensor),
            set_tensor: Some(set_tensor),
            get_tensor: Some(get_tensor),
            set_tensor_2d: None,
            get_tensor_2d: None,
            cpy_tensor: None,
            clear: None,
            reset: None,
        },
        buft: ptr::null_mut(),
        context: ptr::null_mut(),
        size: 0,
        usage: 1, // GGML_BACKEND_BUFFER_USAGE_WEIGHTS
    };
    let mut out: Vec<Filled> = Vec::with_capacity(list.len());
    for (t, ty) in list.iter().zip(tensor_types(meta, list)?) {
        let mut ne = [1i64; 4];
        for (d, &n) in ne.iter_mut().zip(&t.ne) {
            *d = i64::try_from(n).map_err(|_| Error::model("a tensor dimension overflows"))?;
        }
        if t.ne[0] % ty.block_size() as u64 != 0 {
            return Err(Error::model(format!(
                "tensor '{}': {} elements per row is not a multiple of the {ty} block size",
                t.name, t.ne[0]
            )));
        }
        let row = ty.row_size(t.ne[0]).ok_or_else(|| Error::model("a row size overflows"))? as usize;
        let mut nb = [ty.type_size(), row, 0, 0];
        nb[2] = nb[1] * ne[1] as usize;
        nb[3] = nb[2] * ne[2] as usize;
        let mut data = vec![0u8; nb[3] * ne[3] as usize];
        let mut name = [0 as c_char; 64];
        for (d, &s) in name.iter_mut().zip(t.name.as_bytes().iter().take(63)) {
            *d = s as c_char;
        }
        buffer.size = data.len();
        let mut tensor = GgmlTensor {
            ty: ty as c_int,
            buffer: &mut buffer,
            ne,
            nb,
            op: 0,
            op_params: [0; 16],
            flags: 0,
            src: [ptr::null_mut(); 10],
            view_src: ptr::null_mut(),
            view_offs: 0,
            data: data.as_mut_ptr().cast(),
            name,
            extra: ptr::null_mut(),
            padding: [0; 8],
        };
        // SAFETY: the caller's callback, given a tensor laid out as ggml's
        // whose data and buffer live across the call.
        unsafe { set_tensor_data(ptr::addr_of_mut!(tensor).cast::<ggml_tensor>(), ud) };
        // (a repeated name, layer 0's duplicated rope factors: the data the
        // first call gave is kept, as the reference's layers all read
        // layer 0's tensor)
        if !out.iter().any(|(n, ..)| *n == t.name) {
            out.push((t.name.clone(), ty, t.ne.clone(), data));
        }
    }
    Ok(out)
}

#[no_mangle]
pub extern "C" fn llama_model_init_from_user(
    metadata: *mut gguf_context,
    set_tensor_data: llama_model_set_tensor_data_t,
    set_tensor_data_ud: *mut c_void,
    params: llama_model_params,
) -> *mut llama_model {
    let file = guard("llama_model_init_from_user", None, || {
        if metadata.is_null() {
            return Err(Error::invalid("metadata is NULL"));
        }
        let set = set_tensor_data.ok_or_else(|| Error::invalid("set_tensor_data is NULL"))?;
        let meta = read_metadata(metadata)?;
        let overrides = super::model::read_overrides(params.kv_overrides)?;
        let list = crate::model::from_user::tensor_list(&meta, &overrides)?;
        let tensors = fill(metadata, &list, set, set_tensor_data_ud)?;
        // the pairs and the tensors as one GGUF in an anonymous memory file
        let mut w = GgufWriter::from_file(&meta);
        for (name, ty, ne, data) in &tensors {
            w.add_tensor(name, *ty, ne, data.as_slice());
        }
        // SAFETY: memfd_create with a NUL-terminated name and no flags.
        let fd = unsafe { libc::memfd_create(c"minfer-model-from-user".as_ptr(), 0) };
        if fd < 0 {
            return Err(Error::invalid(format!("memfd_create: {}", std::io::Error::last_os_error())));
        }
        // SAFETY: a descriptor just opened, owned by the File from here.
        let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        w.write_to(&mut f)?;
        Ok(Some(f))
    });
    let Some(f) = file else { return ptr::null_mut() };
    super::model::load_source(
        "llama_model_init_from_user",
        "the caller's metadata and tensors",
        crate::model::Source::FileAt(&f, 0),
        &params,
    )
}
