//! Builds the C++ half of the V8 bridge (`cpp/*.cc`, `src/bridge.rs`) against the V8 headers of the
//! Node.js runtime the addon will load into.
//!
//! Header lookup, first match wins:
//! 1. `$HEAP_LABELS_NODE_INCLUDE` (a directory holding `v8.h` and `node_api.h`),
//! 2. `<dir of $HEAP_LABELS_NODE>/../include/node`,
//! 3. `<dir of the first node on PATH>/../include/node`.
//!
//! The V8 ABI defines (pointer compression, sandbox, 31-bit Smis) are derived from that runtime's
//! `config.gypi`, as node-gyp's `common.gypi` does for ordinary addons.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    for var in ["HEAP_LABELS_NODE_INCLUDE", "HEAP_LABELS_NODE"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=cpp");
    println!("cargo:rerun-if-changed=src/bridge.rs");

    napi_build::setup();

    let include = node_include_dir();
    println!(
        "cargo:rerun-if-changed={}",
        include.join("v8-version.h").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        include.join("config.gypi").display()
    );

    let mut build = cxx_build::bridge("src/bridge.rs");
    build
        .std("c++20")
        .include("cpp/include")
        .include(&include)
        .flag_if_supported("-fno-strict-aliasing")
        // Node (and its V8) are built without RTTI, so V8 classes have no typeinfo to link against;
        // subclassing one (the counting ArrayBuffer allocator) needs the same setting, as node-gyp
        // uses for every addon.
        .flag("-fno-rtti")
        .flag_if_supported("-Wno-unused-parameter")
        .define("BUILDING_NODE_EXTENSION", None)
        .define("_LARGEFILE_SOURCE", None)
        .define("_FILE_OFFSET_BITS", Some("64"));
    for define in v8_abi_defines(&include) {
        build.define(define, None);
    }
    for file in cpp_sources() {
        println!("cargo:rerun-if-changed={}", file.display());
        build.file(file);
    }
    build.compile("heap_labels_cpp");

    // The addon is a shared object loaded into `node`, which exports V8 and N-API; the test harness of
    // this crate never calls into V8, so its unresolved V8 symbols must not fail the link.
    println!("cargo:rustc-link-arg=-Wl,--unresolved-symbols=ignore-in-object-files");
}

/// The `include/node` directory of the target runtime (see the module docs for the order).
fn node_include_dir() -> PathBuf {
    if let Some(dir) = env::var_os("HEAP_LABELS_NODE_INCLUDE") {
        let dir = PathBuf::from(dir);
        check_include_dir(&dir, "$HEAP_LABELS_NODE_INCLUDE");
        return dir;
    }
    let node = env::var_os("HEAP_LABELS_NODE")
        .map(PathBuf::from)
        .or_else(|| {
            // Only this fallback depends on PATH: a runtime switch through PATH rebuilds cpp/.
            println!("cargo:rerun-if-env-changed=PATH");
            find_on_path("node")
        })
        .unwrap_or_else(|| {
            panic!(
                "heap-labels: no `node` on PATH; set HEAP_LABELS_NODE or HEAP_LABELS_NODE_INCLUDE"
            )
        });
    let node = fs::canonicalize(&node).unwrap_or(node);
    let dir = node
        .parent()
        .and_then(Path::parent)
        .map(|prefix| prefix.join("include").join("node"))
        .unwrap_or_default();
    check_include_dir(&dir, &format!("the runtime of {}", node.display()));
    dir
}

fn check_include_dir(dir: &Path, origin: &str) {
    if !dir.join("v8.h").is_file() {
        panic!(
            "heap-labels: {} has no v8.h ({origin}); use a runtime that ships its headers, \
             e.g. `scripts/runtimes.sh path primary`, or set HEAP_LABELS_NODE_INCLUDE",
            dir.display()
        );
    }
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Defines that change the layout of V8's inline API, mirroring node-gyp's common.gypi.
fn v8_abi_defines(include: &Path) -> Vec<&'static str> {
    let config = fs::read_to_string(include.join("config.gypi")).unwrap_or_default();
    let on = |name: &str| gypi_flag(&config, name);
    let mut defines = Vec::new();
    if on("v8_enable_pointer_compression") {
        defines.push("V8_COMPRESS_POINTERS");
        if !on("v8_enable_pointer_compression_shared_cage") {
            defines.push("V8_COMPRESS_POINTERS_IN_MULTIPLE_CAGES");
        }
    }
    if on("v8_enable_pointer_compression_shared_cage") {
        defines.push("V8_COMPRESS_POINTERS_IN_SHARED_CAGE");
    }
    if on("v8_enable_pointer_compression") || on("v8_enable_31bit_smis_on_64bit_arch") {
        defines.push("V8_31BIT_SMIS_ON_64BIT_ARCH");
    }
    if on("v8_enable_sandbox") {
        defines.push("V8_ENABLE_SANDBOX");
    }
    if on("v8_enable_external_code_space") {
        defines.push("V8_EXTERNAL_CODE_SPACE");
    }
    defines
}

/// Whether `"name": 1` (or `"true"`) appears in a config.gypi text.
fn gypi_flag(config: &str, name: &str) -> bool {
    let needle = format!("\"{name}\":");
    config.lines().any(|line| {
        let line = line.trim();
        line.strip_prefix(&needle).is_some_and(|value| {
            let value = value.trim().trim_end_matches(',').trim_matches('"');
            value == "1" || value == "true"
        })
    })
}

fn cpp_sources() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir("cpp")
        .expect("cpp/ exists")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cc"))
        .collect();
    files.sort();
    files
}
