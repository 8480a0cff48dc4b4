//! Writes the C header with cbindgen from src/ffi/.
//!
//! The header goes to `$OUT_DIR/llama.h`; a unit test compares it with the
//! committed include/llama.h so that drift fails the tests. Set
//! `MINFER_UPDATE_HEADER=1` to also rewrite include/llama.h.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=MINFER_UPDATE_HEADER");

    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("llama.h");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // Only src/ffi/ is read (its mod.rs and, through it, every file of the
    // module): it is the whole C surface, and nothing else's public items
    // belong in the header.
    let builder = cbindgen::Builder::new().with_config(config).with_src(crate_dir.join("src").join("ffi").join("mod.rs"));
    let bindings = builder
        .generate()
        .expect("cbindgen could not generate llama.h");
    bindings.write_to_file(&out);
    println!("cargo:rustc-env=MINFER_GENERATED_HEADER={}", out.display());

    if std::env::var_os("MINFER_UPDATE_HEADER").is_some_and(|v| v == "1") {
        bindings.write_to_file(crate_dir.join("include").join("llama.h"));
    }
}
