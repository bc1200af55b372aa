//! The WASM's JavaScript glue and chunk loader merged into one module that the page carries inline.
//!
//! On a slow line the page's response arrives one round trip before anything it links can: between the page's last
//! byte and the WASM's first there is a round trip in which the line idles (150 ms at Lighthouse's mobile
//! throttling, ~25 KB). Linked, the glue and the loader (~9 KB brotli) were fetched in parallel with the WASM and
//! shared the line with it; inline, they come in that idle round trip, and the WASM has the line to itself
//! (docs/decisions.md, "The boot script in the page").
//!
//! The two files import each other (the glue imports the loader's chunk-loading functions, the loader the glue's
//! `initSync`), and an inline module can be imported by nothing. So the loader becomes a function whose exports
//! are returned as one object, which stands in for the namespace the glue imported. The files are generated
//! (wasm-bindgen, cargo-leptos' wasm-split), so this recognises their shapes exactly and refuses anything else:
//! the page then links the files as before.
//!
//! On the way the loader starts a split's own file before the small files it shares with other splits
//! ([`own_file_first`]): over HTTP/1.1's six connections the biggest file was asked for last and waited round trips
//! behind a dozen files of a few hundred bytes.

use std::collections::BTreeMap;

/// The merged module's source and the local names, in it, of what the page's boot calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineGlue {
    pub source: String,
    /// The glue's `default` export: loads and instantiates the WASM module.
    pub init: String,
    /// The glue's `hydrate` export.
    pub hydrate: String,
}

/// The chunk loader as the page links it.
#[derive(Debug, Clone, Copy)]
pub struct SplitLoader<'a> {
    pub source: &'a str,
    /// Its file name in the package directory, as the glue imports it (`./<name>`).
    pub file_name: &'a str,
}

/// Why the files could not be merged; the page links them instead.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("the {file} has an import this merge does not know: {statement}")]
    UnknownImport { file: &'static str, statement: String },
    #[error("the {file} has an export this merge does not know: {statement}")]
    UnknownExport { file: &'static str, statement: String },
    #[error("the glue does not export `{0}`")]
    MissingExport(&'static str),
    #[error("the loader does not import `initSync` from the glue")]
    LoaderWithoutGlueImport,
    #[error("the {0} holds text that would end an inline script")]
    EndsScript(&'static str),
}

/// The name the loader's exports are bound to in the merged module.
const SPLIT_NAMESPACE: &str = "__chatwireSplit";
/// The loader function's parameter standing in for `import.meta.url`: chunk URLs resolve against it.
const LOADER_BASE: &str = "__chatwireLoaderBase";

/// Merges the glue (`glue_file_name` in `pkg_url`, e.g. `/pkg/`) and, in a split build, its chunk loader.
pub fn merge(
    glue: &str,
    glue_file_name: &str,
    loader: Option<SplitLoader<'_>>,
    pkg_url: &str,
) -> Result<InlineGlue, MergeError> {
    for (file, source) in [("glue", glue), ("loader", loader.map_or("", |loader| loader.source))] {
        let lower = source.to_ascii_lowercase();
        if lower.contains("</script") || lower.contains("<!--") {
            return Err(MergeError::EndsScript(file));
        }
    }
    let exports = export_list(glue)?;
    let local = |exported: &'static str| {
        exports
            .get(exported)
            .cloned()
            .or_else(|| declares_export(glue, exported).then(|| exported.to_owned()))
            .ok_or(MergeError::MissingExport(exported))
    };
    let (init, init_sync, hydrate) = (local("default")?, local("initSync")?, local("hydrate")?);

    let mut source = String::with_capacity(glue.len() + loader.map_or(0, |loader| loader.source.len()) + 256);
    let glue = match loader {
        Some(loader) => {
            let reordered = own_file_first(loader.source);
            if reordered.is_none() {
                tracing::warn!(
                    "the chunk loader is not the shape it was: a split's own file is asked for after its shared ones"
                );
            }
            let loader_source = reordered.as_deref().unwrap_or(loader.source);
            source.push_str(&loader_as_function(loader_source, glue_file_name, &init_sync, pkg_url)?);
            replace_namespace_imports(glue, loader.file_name)?
        }
        None => glue.to_owned(),
    };
    if let Some(statement) = import_statements(&glue).next() {
        return Err(MergeError::UnknownImport { file: "glue", statement: statement.to_owned() });
    }
    source.push_str(&glue);
    Ok(InlineGlue { source, init, hydrate })
}

/// The loader as `const __chatwireSplit = ((initSync, base) => { …; return { exports } })(…);`.
fn loader_as_function(
    loader: &str,
    glue_file_name: &str,
    init_sync: &str,
    pkg_url: &str,
) -> Result<String, MergeError> {
    let mut body = String::with_capacity(loader.len());
    let mut imports_glue = false;
    let mut exported = Vec::new();
    for line in loader.split_inclusive('\n') {
        let trimmed = line.trim();
        if let Some(statement) = import_statements(trimmed).next() {
            if is_init_sync_import(statement, glue_file_name) {
                imports_glue = true;
                continue;
            }
            return Err(MergeError::UnknownImport { file: "loader", statement: statement.to_owned() });
        }
        if let Some(rest) = trimmed.strip_prefix("export ") {
            let name = rest
                .strip_prefix("const ")
                .and_then(|rest| rest.split_once('='))
                .map(|(name, _)| name.trim())
                .filter(|name| is_identifier(name))
                .ok_or_else(|| MergeError::UnknownExport { file: "loader", statement: trimmed.to_owned() })?;
            exported.push(name.to_owned());
            body.push_str(&line.replacen("export ", "", 1).replace("import.meta.url", LOADER_BASE));
            continue;
        }
        if words(line).any(|word| word == "export") {
            return Err(MergeError::UnknownExport { file: "loader", statement: trimmed.to_owned() });
        }
        body.push_str(&line.replace("import.meta.url", LOADER_BASE));
    }
    if !imports_glue {
        return Err(MergeError::LoaderWithoutGlueImport);
    }
    if body.contains("import.meta") {
        return Err(MergeError::UnknownImport { file: "loader", statement: "import.meta".to_owned() });
    }
    let pkg_url = serde_json::to_string(pkg_url).unwrap_or_default();
    Ok(format!(
        "const {SPLIT_NAMESPACE}=((initSync,{LOADER_BASE})=>{{\n{body}\nreturn{{{}}};\n}})(\
         (...args)=>{init_sync}(...args),new URL({pkg_url},location.href).href);\n",
        exported.join(",")
    ))
}

/// The loader with each split's own file fetched before its shared dependencies: `makeLoad` starts the
/// dependencies' fetches (`deps.map(d => d())`) and then the split's own (`fetcher()`). Both start at once, but the
/// browser gives HTTP/1.1's six connections in the order asked, and a split's own file is the biggest: at mobile
/// throttling the session's 590 KB split got its first byte ~350 ms after it was asked, behind 15 shared files of
/// 0.3–57 KB. `None` when the two statements are not there as wasm-split writes them.
fn own_file_first(loader: &str) -> Option<String> {
    const DEPENDENCIES_FIRST: &str = "const parallelStuff = deps.map(d => d());";
    const OWN_FILE: &str = "const instantiate = fetcher();";
    let dependencies = loader.find(DEPENDENCIES_FIRST)?;
    let between = &loader[dependencies + DEPENDENCIES_FIRST.len()..];
    let gap = between.len() - between.trim_start().len();
    between.trim_start().starts_with(OWN_FILE).then(|| {
        let end = dependencies + DEPENDENCIES_FIRST.len() + gap + OWN_FILE.len();
        let separator = &between[..gap];
        format!("{}{OWN_FILE}{separator}{DEPENDENCIES_FIRST}{}", &loader[..dependencies], &loader[end..])
    })
}

/// `import { initSync } from "./<glue>";`, however it is spaced and quoted.
fn is_init_sync_import(statement: &str, glue_file_name: &str) -> bool {
    let compact: String = statement.chars().filter(|c| !c.is_whitespace()).collect();
    let compact = compact.trim_end_matches(';').replace('\'', "\"");
    compact == format!("import{{initSync}}from\"./{glue_file_name}\"")
}

/// The glue with each `import * as x from "./<loader>"` turned into `const x = __chatwireSplit;`.
fn replace_namespace_imports(glue: &str, loader_file_name: &str) -> Result<String, MergeError> {
    let mut merged = String::with_capacity(glue.len());
    let mut copied = 0;
    for statement in import_ranges(glue) {
        let binding = namespace_import_of(&glue[statement.clone()], loader_file_name)
            .ok_or_else(|| MergeError::UnknownImport { file: "glue", statement: glue[statement.clone()].to_owned() })?;
        merged.push_str(&glue[copied..statement.start]);
        merged.push_str(&format!("const {binding}={SPLIT_NAMESPACE};"));
        copied = statement.end;
    }
    merged.push_str(&glue[copied..]);
    Ok(merged)
}

/// `x` of `import * as x from "./<loader>"` (with or without spaces, either quote, optional `;`).
fn namespace_import_of<'a>(statement: &'a str, loader_file_name: &str) -> Option<&'a str> {
    let rest = statement.strip_prefix("import")?.trim_start().strip_prefix('*')?.trim_start();
    let rest = rest.strip_prefix("as")?;
    let rest = rest.strip_prefix(char::is_whitespace)?.trim_start();
    let name_end = rest.find(|c: char| !is_identifier_char(c))?;
    let (binding, rest) = rest.split_at(name_end);
    let specifier = rest.trim_start().strip_prefix("from")?.trim().trim_end_matches(';').trim();
    let unquoted = specifier
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| specifier.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))?;
    (is_identifier(binding) && unquoted == format!("./{loader_file_name}")).then_some(binding)
}

/// Where the next static import statement starts: `import` as a word followed by `*`, `{`, a quote or a name (not
/// `import(` or `import.meta`).
fn next_import(source: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = source[from..].find("import") {
        let start = from + found;
        let before = source[..start].chars().next_back();
        let after = source[start + "import".len()..].trim_start().chars().next();
        let is_word = !before.is_some_and(is_identifier_char);
        let is_statement = matches!(after, Some('*' | '{' | '"' | '\''))
            || (after.is_some_and(is_identifier_char)
                && source[start + "import".len()..].starts_with(char::is_whitespace));
        if is_word && is_statement {
            return Some(start);
        }
        from = start + "import".len();
    }
    None
}

/// Every static import statement in `source`.
fn import_statements(source: &str) -> impl Iterator<Item = &str> {
    import_ranges(source).map(|range| &source[range])
}

/// Where, in `source`, each static import statement is.
fn import_ranges(source: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut from = 0;
    std::iter::from_fn(move || {
        let start = from + next_import(&source[from..])?;
        from = start + statement_end(&source[start..]);
        Some(start..from)
    })
}

/// The length of the statement `source` starts with: up to its `;`, or the end of its quoted specifier.
fn statement_end(source: &str) -> usize {
    let mut quote = None;
    let mut closed_quote = false;
    for (index, c) in source.char_indices() {
        match quote {
            Some(open) if c == open => {
                quote = None;
                closed_quote = true;
            }
            Some(_) => {}
            None if c == ';' => return index + 1,
            None if c == '"' || c == '\'' => quote = Some(c),
            None if closed_quote && !c.is_whitespace() => return index,
            None => {}
        }
    }
    source.len()
}

/// The glue's `export { local as exported, … }` lists, exported name to local name.
fn export_list(glue: &str) -> Result<BTreeMap<String, String>, MergeError> {
    let mut names = BTreeMap::new();
    let mut rest = glue;
    while let Some(found) = rest.find("export") {
        let before = rest[..found].chars().next_back();
        let after = rest[found + "export".len()..].trim_start();
        rest = &rest[found + "export".len()..];
        if before.is_some_and(is_identifier_char) {
            continue;
        }
        let Some(list) = after.strip_prefix('{') else {
            continue;
        };
        let Some((list, _)) = list.split_once('}') else {
            return Err(MergeError::UnknownExport { file: "glue", statement: after.chars().take(80).collect() });
        };
        for item in list.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let (local, exported) = match item.split_once(" as ") {
                Some((local, exported)) => (local.trim(), exported.trim()),
                None => (item, item),
            };
            if !is_identifier(local) || !is_identifier(exported) {
                return Err(MergeError::UnknownExport { file: "glue", statement: item.to_owned() });
            }
            names.insert(exported.to_owned(), local.to_owned());
        }
    }
    Ok(names)
}

/// Whether the glue declares `name` with `export function name` (or `export async function name`).
fn declares_export(glue: &str, name: &str) -> bool {
    ["export function ", "export async function "].iter().any(|prefix| {
        glue.match_indices(prefix).any(|(at, _)| {
            let rest = &glue[at + prefix.len()..];
            rest.strip_prefix(name).is_some_and(|after| !after.starts_with(is_identifier_char))
        })
    })
}

fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !is_identifier_char(c)).filter(|word| !word.is_empty())
}

fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

fn is_identifier(name: &str) -> bool {
    !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) && name.chars().all(is_identifier_char)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shapes of wasm-bindgen's glue as cargo-leptos minifies it, and of its wasm-split loader.
    const GLUE: &str = concat!(
        r#"let e,_;import*as n from"./__wasm_split.L0ad3rL0ad3rL0ad3r.js";import*as t from"./__wasm_split.L0ad3rL0ad3rL0ad3r.js";"#,
        r#"export class IntoUnderlyingSink{free(){}}export function hydrate(){e.hydrate()}"#,
        r#"function f(){return{"./__wasm_split.L0ad3rL0ad3rL0ad3r.js":n,"./__wasm_split.L0ad3rL0ad3rL0ad3r.js":t}}"#,
        r#"function K(a){return e}async function F(a){return new URL("x.wasm",import.meta.url)}"#,
        r#"export{K as initSync,F as default};"#,
    );
    const LOADER: &str = concat!(
        "import { initSync } from \"./chatwire.Gl0eGl0eGl0eGl0e.js\";\n",
        "function getSharedImports() { return initSync(undefined, undefined); }\n",
        "function makeLoad(fetcher, deps) {\n",
        "    const loader = async () => {\n",
        "        const parallelStuff = deps.map(d => d());\n",
        "        const instantiate = fetcher();\n",
        "        await Promise.all(parallelStuff);\n",
        "        return instantiate(getSharedImports());\n",
        "    };\n",
        "    return loader;\n",
        "}\n",
        "const __chunk_8 = makeLoad(() => {\n",
        "    const src = fetch(new URL(\"./chunk_8.C8C8C8C8C8C8C8C8.wasm\", import.meta.url));\n",
        "}, []);\n",
        "export const __wasm_split_load_session = wrapAsyncCb(makeLoad(() => {}, [__chunk_8]));\n",
        "export const __wasm_split_load_page_lists = wrapAsyncCb(makeLoad(() => {}, []));\n",
    );
    const LOADER_NAME: &str = "__wasm_split.L0ad3rL0ad3rL0ad3r.js";
    const GLUE_NAME: &str = "chatwire.Gl0eGl0eGl0eGl0e.js";

    fn split_loader(source: &str) -> Option<SplitLoader<'_>> {
        Some(SplitLoader { source, file_name: LOADER_NAME })
    }

    #[test]
    fn merges_the_loader_into_a_function_standing_in_for_its_namespace() {
        let merged = merge(GLUE, GLUE_NAME, split_loader(LOADER), "/pkg/").unwrap();
        assert_eq!((merged.init.as_str(), merged.hydrate.as_str()), ("F", "hydrate"));
        let source = &merged.source;
        assert!(source.starts_with("const __chatwireSplit=((initSync,__chatwireLoaderBase)=>{\n"), "{source}");
        assert!(source.contains("return{__wasm_split_load_session,__wasm_split_load_page_lists};"), "{source}");
        assert!(source.contains("})((...args)=>K(...args),new URL(\"/pkg/\",location.href).href);\n"), "{source}");
        assert!(
            source.contains("fetch(new URL(\"./chunk_8.C8C8C8C8C8C8C8C8.wasm\", __chatwireLoaderBase))"),
            "{source}"
        );
        assert!(source.contains("let e,_;const n=__chatwireSplit;const t=__chatwireSplit;export class"), "{source}");
        assert!(!source.contains("import{") && !source.contains("import*") && !source.contains("import {"), "{source}");
        assert!(!source.contains("export const"), "the loader's exports are the function's result: {source}");
        assert!(source.contains("new URL(\"x.wasm\",import.meta.url)"), "the glue's own default path is kept");
    }

    #[test]
    fn a_split_asks_for_its_own_file_before_its_shared_ones() {
        let source = merge(GLUE, GLUE_NAME, split_loader(LOADER), "/pkg/").unwrap().source;
        assert!(
            source.contains(
                "        const instantiate = fetcher();\n        const parallelStuff = deps.map(d => d());\n        await"
            ),
            "{source}"
        );
        let other_shape = LOADER.replace("const instantiate = fetcher();", "const instantiate = fetcher(1);");
        assert_eq!(own_file_first(&other_shape), None);
        assert!(
            merge(GLUE, GLUE_NAME, split_loader(&other_shape), "/pkg/").is_ok(),
            "an unknown order is left as it is"
        );
    }

    #[test]
    fn merges_a_glue_without_chunks() {
        let glue = r#"export function hydrate(){}function K(){}function F(){}export{K as initSync,F as default};"#;
        let merged = merge(glue, GLUE_NAME, None, "/pkg/").unwrap();
        assert_eq!(merged.source, glue);
        assert_eq!(merged.init, "F");
    }

    #[test]
    fn reads_unminified_export_lists() {
        let glue = "export function hydrate() {}\nfunction initSync() {}\nasync function __wbg_init() {}\n\
                    export { initSync, __wbg_init as default };\n";
        let merged = merge(glue, GLUE_NAME, None, "/pkg/").unwrap();
        assert_eq!((merged.init.as_str(), merged.hydrate.as_str()), ("__wbg_init", "hydrate"));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        let refused = |glue: &str, loader: Option<&str>| merge(glue, GLUE_NAME, loader.and_then(split_loader), "/pkg/");
        let other_import = GLUE.replacen("import*as n", "import*as n from\"./other.js\";import*as m", 1);
        assert!(matches!(refused(&other_import, Some(LOADER)), Err(MergeError::UnknownImport { file: "glue", .. })));
        let loader_import = format!("import {{ x }} from \"./x.js\";\n{LOADER}");
        assert!(matches!(refused(GLUE, Some(&loader_import)), Err(MergeError::UnknownImport { file: "loader", .. })));
        let loader_export = format!("{LOADER}export function later() {{}}\n");
        assert!(matches!(refused(GLUE, Some(&loader_export)), Err(MergeError::UnknownExport { file: "loader", .. })));
        let no_glue_import = LOADER.lines().skip(1).collect::<Vec<_>>().join("\n");
        assert_eq!(refused(GLUE, Some(&no_glue_import)), Err(MergeError::LoaderWithoutGlueImport));
        assert_eq!(
            refused(&GLUE.replace("F as default", "F as start"), Some(LOADER)),
            Err(MergeError::MissingExport("default"))
        );
        let no_loader = refused(GLUE, None);
        assert!(matches!(no_loader, Err(MergeError::UnknownImport { file: "glue", .. })), "{no_loader:?}");
        let ends = GLUE.replace("x.wasm", "</script>");
        assert_eq!(refused(&ends, Some(LOADER)), Err(MergeError::EndsScript("glue")));
    }
}
