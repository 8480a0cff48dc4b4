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
    for (key, value) in file.iter_kv() {
        sink ^= key.len();
        // Keys that were not UTF-8 are decoded lossily and cannot be looked up.
        if !key.contains('\u{FFFD}') {
            let found = file
                .find_key(key)
                .and_then(|i| file.get_kv(i))
                .map(|(_, v)| v);
            assert!(found.is_some_and(|v| std::ptr::eq(v, value)));
        }
        sink ^= file.format_value(value).len();
        walk(&file, value, &mut sink);
        assert!(file.to_owned_value(value).is_some());
    }
    let mut total = 0u64;
    for t in file.tensors() {
        let data = file.tensor_data(t);
        assert_eq!(data.len() as u64, t.nbytes);
        assert_eq!(t.offset % file.alignment(), 0);
        total += t.nbytes;
        sink ^= data
            .iter()
            .fold(0usize, |a, &b| a.wrapping_add(usize::from(b)));
        if !t.name.contains('\u{FFFD}') {
            assert!(std::ptr::eq(
                file.find_tensor(&t.name).expect("tensor by name"),
                t
            ));
        }
    }
    assert_eq!(total, file.total_bytes());
    std::hint::black_box(sink);
});

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
