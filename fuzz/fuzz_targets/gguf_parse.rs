//! Fuzzes the GGUF reader: any input must parse or fail with an error, never
//! panic, overflow or allocate without bound. On success, every key-value pair
//! is formatted, every array iterated, every tensor's data read.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llama::gguf::{GgufFile, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(file) = GgufFile::from_bytes(data.to_vec()) else {
        return;
    };
    let mut sink = 0usize;
    let mut n_kv = 0;
    for (i, (key, value)) in file.iter_kv().enumerate() {
        n_kv += 1;
        sink ^= key.len();
        assert!(file.get_kv(i).is_some_and(|(_, v)| same(&v, &value)));
        // Keys that were not UTF-8 are decoded lossily and cannot be looked up.
        if !key.contains('\u{FFFD}') {
            assert_eq!(file.find_key(&key), Some(i));
            assert!(file.get(&key).is_some_and(|v| same(&v, &value)));
        }
        sink ^= file.format_value(&value).len();
        walk(&file, &value, &mut sink);
        assert!(file.to_owned_value(&value).is_some());
    }
    assert_eq!(n_kv, file.n_kv());
    let mut total = 0u64;
    let mut n_tensors = 0;
    for (i, t) in file.tensors().enumerate() {
        n_tensors += 1;
        let data = file.tensor_data(&t);
        assert_eq!(data.len() as u64, t.nbytes);
        assert_eq!(t.offset % file.alignment(), 0);
        total += t.nbytes;
        sink ^= data
            .iter()
            .fold(0usize, |a, &b| a.wrapping_add(usize::from(b)));
        if !t.name.contains('\u{FFFD}') {
            assert_eq!(file.find_tensor_index(&t.name), Some(i));
            assert_eq!(file.find_tensor(&t.name).as_ref(), Some(&t));
        }
    }
    assert_eq!(n_tensors, file.n_tensors());
    assert_eq!(total, file.total_bytes());
    std::hint::black_box(sink);
});

/// Equal values (NaN floats included: both come from the same bytes).
fn same(a: &Value, b: &Value) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

/// Reads every element of every array, nested arrays included.
fn walk(file: &GgufFile, value: &Value, sink: &mut usize) {
    match value {
        Value::Str(s) => *sink ^= file.str_bytes(s).len(),
        Value::Array(a) => {
            let mut n = 0u64;
            for v in file.array_values(a) {
                n += 1;
                walk(file, &v, sink);
            }
            assert_eq!(n, a.len);
            if let Some(strings) = file.array_strings(a) {
                assert_eq!(strings.count() as u64, a.len);
            }
            if let Some(v) = file.array_vec::<u32>(a) {
                assert_eq!(v.len() as u64, a.len);
            }
            if let Some(b) = file.array_u8(a) {
                assert_eq!(b.len() as u64, a.len);
            }
        }
        _ => *sink ^= value.type_id() as usize,
    }
}
