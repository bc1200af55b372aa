//! The zh-CN table on the server: `zh-CN.txt` parsed once, by key name, into key order; the same texts as the
//! lines a page inlines and `/lang/zh-CN.<hash>.txt` serves, which the browser reads by position.

use std::sync::LazyLock;

use super::{EN, english};

/// The translation file as written: `Key = text` lines (the text is everything after `= `, spaces included); blank
/// lines and lines starting with `#` are comments.
pub const ZH_CN_TEXT: &str = include_str!("zh-CN.txt");

/// The file's texts in key order. `Err` names every line that is not `Key = text`, names an unknown key or a key
/// twice, and every key without a text; the parity test shows them, and the server falls back to English for them.
pub fn zh_cn_lines(file: &'static str) -> (Vec<Option<&'static str>>, Vec<String>) {
    let names: Vec<&str> = english().map(|(name, _)| name).collect();
    let mut texts = vec![None; names.len()];
    let mut problems = Vec::new();
    for (number, line) in file.lines().enumerate() {
        // A text keeps its own spaces (" · 缓存读取 {n}" follows another text): only the one after `=` is the format's.
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, text)) = line.split_once('=') else {
            problems.push(format!("line {}: not `Key = text`: {line}", number + 1));
            continue;
        };
        let name = name.trim();
        match names.iter().position(|known| *known == name) {
            None => problems.push(format!("line {}: no such key in keys.rs: {name}", number + 1)),
            Some(index) if texts[index].is_some() => problems.push(format!("line {}: {name} again", number + 1)),
            Some(index) => texts[index] = Some(text.strip_prefix(' ').unwrap_or(text)),
        }
    }
    for (index, text) in texts.iter().enumerate() {
        if text.is_none() {
            problems.push(format!("{} has no zh-CN text", names[index]));
        }
    }
    (texts, problems)
}

static ZH_CN: LazyLock<Vec<Option<&'static str>>> = LazyLock::new(|| {
    let (texts, problems) = zh_cn_lines(ZH_CN_TEXT);
    for problem in &problems {
        tracing::error!("src/i18n/zh-CN.txt: {problem}");
    }
    texts
});

/// The zh-CN text at a key's position, if the file has it.
pub(super) fn zh_cn(index: usize) -> Option<&'static str> {
    ZH_CN.get(index).copied().flatten()
}

/// The texts the browser gets: one per line in key order (English where zh-CN has none), and the path that serves
/// them, named by their hash so that it can be cached for good.
pub fn zh_cn_wire() -> &'static (String, String) {
    static WIRE: LazyLock<(String, String)> = LazyLock::new(|| {
        let lines: Vec<&str> = (0..EN.len()).map(|index| zh_cn(index).unwrap_or(EN[index])).collect();
        let text = lines.join("\n");
        // FNV-1a: a name that changes with the texts, not a security property.
        let hash = text
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3));
        (text, format!("/lang/zh-CN.{hash:016x}.txt"))
    });
    &WIRE
}
