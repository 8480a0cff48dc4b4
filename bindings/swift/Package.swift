// swift-tools-version:5.5
// libllama (minfer, or llama.cpp's library at the same ABI) as a Swift
// package: `import CLlama` gives the C API of llama.h. The library is a system
// library found through pkg-config (llama.pc, installed by scripts/install.sh).
// See README.md. Not built here: this machine has no Swift toolchain; the
// module map is checked with clang by scripts/test-swift-module.sh.
import PackageDescription

let package = Package(
    name: "CLlama",
    products: [
        // a system library product: one system target, no type
        .library(name: "CLlama", targets: ["CLlama"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLlama",
            path: "Sources/CLlama",
            pkgConfig: "llama"
        ),
    ]
)
