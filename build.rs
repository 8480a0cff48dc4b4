//! Writes the C header with cbindgen from src/ffi/.
//!
//! The header goes to `$OUT_DIR/llama.h`; a unit test compares it with the
//! committed include/llama.h so that drift fails the tests. Set
//! `MINFER_UPDATE_HEADER=1` to also rewrite include/llama.h.

use std::path::{Path, PathBuf};

/// The shared library's SONAME: the reference's (libllama.so.0), so a program
/// linked against either library loads the other.
const SONAME: &str = "libllama.so.0";

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{SONAME}");
        soname_alias();
    }

    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=MINFER_UPDATE_HEADER");

    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("llama.h");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // Only src/ffi/ is read (its mod.rs and, through it, every file of the
    // module): it is the whole C surface, and nothing else's public items
    // belong in the header.
    let builder =
        cbindgen::Builder::new().with_config(config).with_src(crate_dir.join("src").join("ffi").join("mod.rs"));
    let bindings = builder.generate().expect("cbindgen could not generate llama.h");
    bindings.write_to_file(&out);
    println!("cargo:rustc-env=MINFER_GENERATED_HEADER={}", out.display());

    if std::env::var_os("MINFER_UPDATE_HEADER").is_some_and(|v| v == "1") {
        bindings.write_to_file(crate_dir.join("include").join("llama.h"));
    }
}

/// A program linked with `-Ltarget/<profile> -lllama` records the SONAME
/// (libllama.so.0) as what it needs, so the loader looks for that name beside
/// libllama.so: a symlink `libllama.so.0 -> libllama.so` in the directory the
/// cdylib lands in (`OUT_DIR` is `<that directory>/build/<pkg>-<hash>/out`).
fn soname_alias() {
    let Some(out_dir) = std::env::var_os("OUT_DIR") else { return };
    let Some(profile_dir) = Path::new(&out_dir).ancestors().nth(3) else { return };
    let link = profile_dir.join(SONAME);
    if link.symlink_metadata().is_ok() {
        return;
    }
    #[cfg(unix)]
    if let Err(e) = std::os::unix::fs::symlink("libllama.so", &link) {
        println!("cargo:warning=could not create {}: {e}", link.display());
    }
}
