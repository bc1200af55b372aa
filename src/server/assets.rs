//! The web assets (WASM, JS, CSS, public files): embedded in release builds, read from disk in development.
//!
//! Responses pick the precompressed brotli or gzip variant the browser accepts,
//! carry an ETag per variant, and let browsers cache content-hashed `/pkg`
//! files forever.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use axum::body::Body;
use axum::http::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::boot_script::{self, SplitLoader};
use super::fingerprint::fingerprint;
use crate::app::{PageAssets, PageScript, SESSION_SPLIT, Stylesheet};

/// One file of the site, compiled into the binary.
pub struct EmbeddedAsset {
    /// URL path without the leading `/`, e.g. `pkg/chatwire.Ab12.js`.
    pub path: &'static str,
    pub fingerprint: &'static str,
    pub identity: &'static [u8],
    pub brotli: Option<&'static [u8]>,
    pub gzip: Option<&'static [u8]>,
}

/// Filled in by `build.rs`: empty in debug builds.
static EMBEDDED: &[EmbeddedAsset] = include!(concat!(env!("OUT_DIR"), "/embedded_assets.rs"));

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const REVALIDATE: &str = "no-cache";

/// Where the site's files come from.
#[derive(Debug, Clone)]
pub enum SiteAssets {
    /// Compiled into the binary (release builds made by cargo-leptos).
    Embedded,
    /// Read from the site root on each request, so rebuilt CSS and WASM show up without a restart.
    Disk { site_root: PathBuf },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Identity,
    Brotli,
    Gzip,
}

impl Encoding {
    fn header(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Brotli => Some("br"),
            Encoding::Gzip => Some("gzip"),
        }
    }
}

/// One file ready to answer a request: its bytes in the chosen encoding.
struct Found<'a> {
    body: std::borrow::Cow<'a, [u8]>,
    encoding: Encoding,
    fingerprint: std::borrow::Cow<'a, str>,
}

impl SiteAssets {
    /// The embedded site when this binary has one, else the site root on disk.
    pub fn detect(site_root: impl Into<PathBuf>) -> Self {
        if EMBEDDED.is_empty() { SiteAssets::Disk { site_root: site_root.into() } } else { SiteAssets::Embedded }
    }

    pub fn describe(&self) -> String {
        match self {
            SiteAssets::Embedded => format!("{} files embedded in the binary", EMBEDDED.len()),
            SiteAssets::Disk { site_root } => format!("files under {}", site_root.display()),
        }
    }

    fn file_names_in_pkg(&self, pkg_dir: &str) -> Vec<String> {
        let prefix = format!("{pkg_dir}/");
        match self {
            SiteAssets::Embedded => EMBEDDED
                .iter()
                .filter_map(|asset| asset.path.strip_prefix(&prefix))
                .filter(|name| !name.contains('/'))
                .map(str::to_owned)
                .collect(),
            SiteAssets::Disk { site_root } => std::fs::read_dir(site_root.join(pkg_dir))
                .map(|entries| {
                    entries.filter_map(|e| e.ok()).filter_map(|e| e.file_name().into_string().ok()).collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The URL of the page's WASM module, with its content hash in the name; its script, merged into the page when
    /// embedded, else linked; and its stylesheet: the embedded one's text, or a link to the one on disk.
    pub fn page_assets(&self, output_name: &str, pkg_dir: &str) -> Option<PageAssets> {
        let names = self.file_names_in_pkg(pkg_dir);
        let find = |extension: &str| {
            let hashed = names.iter().find(|name| is_hashed_name(name, output_name, extension));
            let plain = format!("{output_name}.{extension}");
            let name = hashed.cloned().or_else(|| names.contains(&plain).then_some(plain))?;
            Some(format!("/{pkg_dir}/{name}"))
        };
        let stylesheet = match self {
            SiteAssets::Embedded => {
                let path = find("css")?;
                let asset = EMBEDDED.iter().find(|asset| path.strip_prefix('/') == Some(asset.path))?;
                Stylesheet::Inline(std::str::from_utf8(asset.identity).ok()?)
            }
            SiteAssets::Disk { .. } => Stylesheet::Link(find("css")?),
        };
        // The split build's chunk loader, which the script imports: `cargo leptos watch` builds none.
        let split_loader = names.iter().find(|name| is_hashed_name(name, "__wasm_split", "js"));
        let glue = find("js")?;
        let script = match self {
            SiteAssets::Embedded => inline_script(&glue, split_loader.map(String::as_str), pkg_dir),
            SiteAssets::Disk { .. } => None,
        }
        .unwrap_or_else(|| PageScript::Linked {
            glue,
            split_loader: split_loader.map(|name| format!("/{pkg_dir}/{name}")),
        });
        let session_chunk = self.split_files(&names, pkg_dir, SESSION_SPLIT);
        Some(PageAssets { wasm: find("wasm")?, script, stylesheet, session_chunk })
    }

    /// The URL paths of the files that make up the chunk `split` (wasm-split's manifest in `pkg_dir`, which names
    /// each split's files), its own file first as the loader asks for them (`boot_script::own_file_first`). Empty
    /// when the build has no such split (`cargo leptos watch` splits nothing) or its manifest cannot be read.
    fn split_files(&self, names: &[String], pkg_dir: &str, split: &str) -> Vec<String> {
        let Some(manifest) = names.iter().find(|name| is_hashed_name(name, "__wasm_split_manifest", "json")) else {
            return Vec::new();
        };
        let path = format!("{pkg_dir}/{manifest}");
        let from_disk;
        let splits = match self {
            // The embedded files never change: read once per process.
            SiteAssets::Embedded => {
                static SPLITS: OnceLock<SplitManifest> = OnceLock::new();
                SPLITS.get_or_init(|| {
                    let source = EMBEDDED.iter().find(|asset| asset.path == path).map(|asset| asset.identity);
                    read_split_manifest(&path, source.unwrap_or_default())
                })
            }
            SiteAssets::Disk { site_root } => {
                from_disk = read_split_manifest(&path, &std::fs::read(site_root.join(&path)).unwrap_or_default());
                &from_disk
            }
        };
        let mut files: Vec<String> = splits
            .get(split)
            .into_iter()
            .flatten()
            // The names go into a script as they are: only the build's own `<name>.<hash>`, nothing to escape.
            .filter(|name| {
                name.split_once('.').is_some_and(|(stem, hash)| crate::app::is_plain_id(stem) && is_content_hash(hash))
            })
            .map(|name| format!("/{pkg_dir}/{name}.wasm"))
            .collect();
        files.sort_by_key(|file| !file.rsplit('/').next().is_some_and(|name| name.starts_with("split_")));
        files
    }

    /// Answers a GET for `url_path`, or `None` when there is no such file.
    pub fn respond(&self, url_path: &str, request_headers: &HeaderMap) -> Option<Response> {
        let relative = safe_relative_path(url_path)?;
        let accepted = accepted_encodings(request_headers);
        let found = match self {
            SiteAssets::Embedded => {
                let asset = EMBEDDED.iter().find(|asset| asset.path == relative)?;
                let (body, encoding) = match (asset.brotli, asset.gzip) {
                    (Some(brotli), _) if accepted.brotli => (brotli, Encoding::Brotli),
                    (_, Some(gzip)) if accepted.gzip => (gzip, Encoding::Gzip),
                    _ => (asset.identity, Encoding::Identity),
                };
                Found { body: body.into(), encoding, fingerprint: asset.fingerprint.into() }
            }
            SiteAssets::Disk { site_root } => read_from_disk(&site_root.join(&relative), accepted)?,
        };
        Some(respond_with(&relative, found, request_headers))
    }
}

/// wasm-split's manifest: each split's files, by the name its split point gives it, without their `.wasm`.
type SplitManifest = std::collections::BTreeMap<String, Vec<String>>;

/// The manifest at `path`; empty, with a warning, when it is not one (its chunks are then fetched when asked for).
fn read_split_manifest(path: &str, source: &[u8]) -> SplitManifest {
    serde_json::from_slice(source)
        .inspect_err(|error| tracing::warn!("{path} is not a split manifest, no chunk is fetched early: {error}"))
        .unwrap_or_default()
}

/// The embedded glue (`glue`, a URL path) and chunk loader (`loader`, a file name in `pkg_dir`) merged into one
/// inline script, once per process; `None`, with a warning, when they cannot be (the page then links them).
/// The merge is kept for the first files asked for (a process serves one build); asked for others, the page links
/// them rather than carry the wrong script.
fn inline_script(glue: &str, loader: Option<&str>, pkg_dir: &str) -> Option<PageScript> {
    static MERGED: OnceLock<(String, Option<boot_script::InlineGlue>)> = OnceLock::new();
    let files = format!("{glue} {loader:?} {pkg_dir}");
    let embedded = |path: &str| {
        EMBEDDED
            .iter()
            .find(|asset| asset.path == path.trim_start_matches('/'))
            .and_then(|asset| std::str::from_utf8(asset.identity).ok())
    };
    let (merged_files, merged) = MERGED.get_or_init(|| {
        let merged = || {
            let glue_source = embedded(glue)?;
            let glue_file_name = glue.rsplit('/').next().unwrap_or(glue);
            let loader = match loader {
                Some(file_name) => {
                    Some(SplitLoader { source: embedded(&format!("{pkg_dir}/{file_name}"))?, file_name })
                }
                None => None,
            };
            boot_script::merge(glue_source, glue_file_name, loader, &format!("/{pkg_dir}/"))
                .inspect_err(|error| tracing::warn!("the page links its script instead of carrying it: {error}"))
                .ok()
        };
        (files.clone(), merged())
    });
    if *merged_files != files {
        tracing::warn!("the page links its script: it was merged from {merged_files}, not {files}");
        return None;
    }
    merged.as_ref().map(|merged| PageScript::Inline {
        source: &merged.source,
        init: &merged.init,
        hydrate: &merged.hydrate,
    })
}

fn read_from_disk(path: &Path, accepted: Accepted) -> Option<Found<'static>> {
    let identity = std::fs::read(path).ok()?;
    let fingerprint = fingerprint(&identity).into();
    let variant = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::fs::read(PathBuf::from(name)).ok()
    };
    let (body, encoding) = if accepted.brotli
        && let Some(body) = variant(".br")
    {
        (body, Encoding::Brotli)
    } else if accepted.gzip
        && let Some(body) = variant(".gz")
    {
        (body, Encoding::Gzip)
    } else {
        (identity, Encoding::Identity)
    };
    Some(Found { body: body.into(), encoding, fingerprint })
}

fn respond_with(relative: &str, found: Found<'_>, request_headers: &HeaderMap) -> Response {
    let etag = match found.encoding.header() {
        Some(coding) => format!("\"{}-{coding}\"", found.fingerprint),
        None => format!("\"{}\"", found.fingerprint),
    };
    let cache_control = if is_hashed_file_name(relative) { IMMUTABLE } else { REVALIDATE };
    let not_modified = request_headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|candidate| {
            let candidate = candidate.trim();
            candidate == "*" || candidate.trim_start_matches("W/") == etag
        });
    let mut response = if not_modified {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let mut response = Response::new(Body::from(found.body.into_owned()));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type(relative)));
        if let Some(coding) = found.encoding.header() {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static(coding));
        }
        response
    };
    let headers = response.headers_mut();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static(cache_control));
    headers.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Fingerprints and codings are ASCII hex, digits and letters, always a valid header value.
    headers.insert(ETAG, HeaderValue::from_str(&etag).expect("an ETag built from hex digits is a valid header"));
    response
}

#[derive(Debug, Clone, Copy, Default)]
struct Accepted {
    brotli: bool,
    gzip: bool,
}

/// Which of our encodings the client accepts (`q=0` means "not this one").
fn accepted_encodings(headers: &HeaderMap) -> Accepted {
    let mut accepted = Accepted::default();
    for value in headers.get_all(ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()) {
        for item in value.split(',') {
            let mut pieces = item.split(';');
            let coding = pieces.next().unwrap_or_default().trim().to_ascii_lowercase();
            let refused = pieces.any(|param| {
                param.trim().strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()).is_some_and(|q| q <= 0.0)
            });
            match coding.as_str() {
                "br" => accepted.brotli = !refused,
                "gzip" | "x-gzip" => accepted.gzip = !refused,
                "*" => {
                    accepted.brotli |= !refused;
                    accepted.gzip |= !refused;
                }
                _ => {}
            }
        }
    }
    accepted
}

/// The URL path as a relative file path, or `None` if it tries to climb out of the site.
fn safe_relative_path(url_path: &str) -> Option<String> {
    let relative = url_path.strip_prefix('/').unwrap_or(url_path);
    if relative.is_empty() || relative.contains('\\') {
        return None;
    }
    Path::new(relative).components().all(|c| matches!(c, Component::Normal(_))).then(|| relative.to_owned())
}

/// `name.<hash>.ext` as written by cargo-leptos' `hash-files` (URL-safe base64 of the content hash).
fn is_hashed_file_name(relative: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    let mut parts = name.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(hash), Some(_), None) => is_content_hash(hash),
        _ => false,
    }
}

/// `<stem>.<hash>.<extension>`, as cargo-leptos and wasm-split name the files they hash.
fn is_hashed_name(name: &str, stem: &str, extension: &str) -> bool {
    name.strip_prefix(stem)
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(|rest| rest.strip_suffix(extension))
        .and_then(|hash| hash.strip_suffix('.'))
        .is_some_and(is_content_hash)
}

fn is_content_hash(text: &str) -> bool {
    text.len() >= 16 && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn content_type(path: &str) -> &'static str {
    let extension = path.rsplit('.').next().unwrap_or_default().to_ascii_lowercase();
    match extension.as_str() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn accept_encoding_honours_q_zero_and_wildcards() {
        let a = accepted_encodings(&headers(&[("accept-encoding", "gzip, deflate, br;q=0")]));
        assert!(a.gzip && !a.brotli);
        let a = accepted_encodings(&headers(&[("accept-encoding", "*")]));
        assert!(a.gzip && a.brotli);
        let a = accepted_encodings(&headers(&[("accept-encoding", "identity")]));
        assert!(!a.gzip && !a.brotli);
    }

    #[test]
    fn paths_that_climb_out_of_the_site_are_refused() {
        assert_eq!(safe_relative_path("/pkg/app.js").as_deref(), Some("pkg/app.js"));
        for bad in ["/../etc/passwd", "/pkg/../../x", "/", "/pkg\\..\\x", "//etc/passwd"] {
            assert_eq!(safe_relative_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_content_hashed_names_are_cached_forever() {
        assert!(is_hashed_file_name("pkg/chatwire.vQ9-3kZp_Ab12cDe.js"));
        assert!(!is_hashed_file_name("pkg/chatwire.js"));
        assert!(!is_hashed_file_name("favicon.svg"));
    }

    #[test]
    fn disk_assets_pick_the_accepted_precompressed_variant() {
        let dir = std::env::temp_dir().join(format!("chatwire-assets-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        std::fs::write(dir.join("pkg/app.css"), "body{}").unwrap();
        std::fs::write(dir.join("pkg/app.css.br"), "BR").unwrap();
        let site = SiteAssets::Disk { site_root: dir.clone() };

        let br = site.respond("/pkg/app.css", &headers(&[("accept-encoding", "gzip, br")])).unwrap();
        assert_eq!(br.headers()[CONTENT_ENCODING], "br");
        assert_eq!(br.headers()[CONTENT_TYPE], "text/css; charset=utf-8");
        let etag = br.headers()[ETAG].clone();

        let plain = site.respond("/pkg/app.css", &headers(&[("accept-encoding", "gzip")])).unwrap();
        assert!(plain.headers().get(CONTENT_ENCODING).is_none(), "no .gz twin, so identity");
        assert_ne!(plain.headers()[ETAG], etag, "each encoding has its own ETag");

        let mut conditional = headers(&[("accept-encoding", "br")]);
        conditional.insert(IF_NONE_MATCH, etag);
        assert_eq!(site.respond("/pkg/app.css", &conditional).unwrap().status(), StatusCode::NOT_MODIFIED);
        assert!(site.respond("/pkg/missing.css", &HeaderMap::new()).is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_splits_files_come_from_the_manifest_its_own_first() {
        let dir = std::env::temp_dir().join(format!("chatwire-split-manifest-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        let site = SiteAssets::Disk { site_root: dir.clone() };
        let names = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        assert!(site.split_files(&names(&[]), "pkg", "session").is_empty(), "a build without a split");

        let manifest = "__wasm_split_manifest.qZlSdllyvK4v3G4XTd68NQ.json";
        std::fs::write(
            dir.join("pkg").join(manifest),
            r#"{"lists":["chunk_1.AAAAAAAAAAAAAAAA"],"session":["chunk_1.AAAAAAAAAAAAAAAA","chunk_2.BBBBBBBBBBBBBBBB","split_session.CCCCCCCCCCCCCCCC","x\"</script>"]}"#,
        )
        .unwrap();
        assert_eq!(
            site.split_files(&names(&[manifest]), "pkg", "session"),
            [
                "/pkg/split_session.CCCCCCCCCCCCCCCC.wasm",
                "/pkg/chunk_1.AAAAAAAAAAAAAAAA.wasm",
                "/pkg/chunk_2.BBBBBBBBBBBBBBBB.wasm"
            ]
        );
        assert!(site.split_files(&names(&[manifest]), "pkg", "other").is_empty(), "no such split");

        std::fs::write(dir.join("pkg").join(manifest), "not json").unwrap();
        assert!(site.split_files(&names(&[manifest]), "pkg", "session").is_empty(), "an unreadable manifest");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
