//! Embeds the built site (`target/site`: wasm, js, css, public files and their precompressed twins) into release server builds.
//!
//! cargo-leptos builds and precompresses the front end before it compiles the
//! server (because `hash-files` and `precompress` are on), so by the time this
//! runs for the release server, the site is complete. Debug builds embed
//! nothing and serve the site from disk, which keeps `cargo leptos watch`'s
//! CSS and WASM reloads working without recompiling the server.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[path = "src/server/fingerprint.rs"]
mod fingerprint;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=LEPTOS_SITE_ROOT");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let generated = out_dir.join("embedded_assets.rs");

    let is_server = std::env::var_os("CARGO_FEATURE_SSR").is_some();
    let is_release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let site_root = site_root();

    let files = if is_server && is_release {
        println!("cargo::rerun-if-changed={}", site_root.display());
        match collect(&site_root) {
            Some(files) => files,
            None => {
                println!(
                    "cargo::warning=no built site at {}: this binary will serve web assets from disk. \
                     Build with `cargo leptos build --release` to embed them.",
                    site_root.display()
                );
                BTreeMap::new()
            }
        }
    } else {
        BTreeMap::new()
    };
    std::fs::write(&generated, render(&files)).expect("writing embedded_assets.rs into OUT_DIR");
}

fn site_root() -> PathBuf {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let configured = std::env::var("LEPTOS_SITE_ROOT").unwrap_or_else(|_| "target/site".into());
    manifest_dir.join(configured)
}

#[derive(Default)]
struct Variants {
    identity: Option<PathBuf>,
    brotli: Option<PathBuf>,
    gzip: Option<PathBuf>,
}

/// Every file under the site root, keyed by its URL path, with its `.br`/`.gz` twins.
fn collect(site_root: &Path) -> Option<BTreeMap<String, Variants>> {
    if !site_root.join("pkg").is_dir() {
        return None;
    }
    let mut files = BTreeMap::<String, Variants>::new();
    let mut pending = vec![site_root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("reading the site directory") {
            let path = entry.expect("reading a site directory entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path
                .strip_prefix(site_root)
                .expect("walked paths are under the site root")
                .to_string_lossy()
                .replace('\\', "/");
            let (url_path, slot): (&str, fn(&mut Variants) -> &mut Option<PathBuf>) =
                if let Some(base) = relative.strip_suffix(".br") {
                    (base, |v| &mut v.brotli)
                } else if let Some(base) = relative.strip_suffix(".gz") {
                    (base, |v| &mut v.gzip)
                } else {
                    (relative.as_str(), |v| &mut v.identity)
                };
            *slot(files.entry(url_path.to_owned()).or_default()) = Some(path.clone());
        }
    }
    // wasm-bindgen's TypeScript declarations are for editors, not browsers.
    files.retain(|url_path, variants| variants.identity.is_some() && !url_path.ends_with(".d.ts"));
    Some(files)
}

fn render(files: &BTreeMap<String, Variants>) -> String {
    let mut code = String::from("&[\n");
    for (url_path, variants) in files {
        let identity = variants.identity.as_ref().expect("only files with an identity variant are kept");
        let bytes = std::fs::read(identity).expect("reading a site file");
        let include = |path: &Option<PathBuf>| match path {
            Some(path) => format!("Some(include_bytes!({:?}))", path.display().to_string()),
            None => "None".into(),
        };
        writeln!(
            code,
            "    EmbeddedAsset {{ path: {url_path:?}, fingerprint: {:?}, identity: include_bytes!({:?}), brotli: {}, gzip: {} }},",
            fingerprint::fingerprint(&bytes),
            identity.display().to_string(),
            include(&variants.brotli),
            include(&variants.gzip),
        )
        .expect("writing to a String cannot fail");
    }
    code.push(']');
    code
}
