//! The page's words, one place per language: English is the table `texts!` declares in `keys.rs` (compiled into
//! both builds), Simplified Chinese is `zh-CN.txt` beside it (`Key = text` lines), which only the server compiles
//! in. The server renders a zh-CN page itself and inlines the table's texts into it, in key order, so hydration
//! has them at once; a page switched to zh-CN in the browser fetches the same texts from
//! [`zh_cn_path`]. An English reader's WASM therefore carries English and a line splitter, nothing more
//! (docs/decisions.md, "A second language").
//!
//! Texts with values in them name their placeholders (`{error}`) and go through [`fill`]; counts through
//! [`plural`], which picks the `…One` or `…Other` key by the language's rule (Chinese has one form). The server's
//! own error messages and the HTTP API stay English: only what the page draws is here.

mod keys;

#[cfg(feature = "ssr")]
mod server;
#[cfg(feature = "ssr")]
pub use self::server::{ZH_CN_TEXT, zh_cn_lines, zh_cn_wire};

use self::keys::EN;
pub use self::keys::Key;

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod browser;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use self::browser::{start, switch};

use leptos::prelude::*;

/// The cookie the language switch sets; without it the browser's `Accept-Language` decides.
pub const LANGUAGE_COOKIE: &str = "chatwire-lang";

/// The `<meta>` whose `content` carries a zh-CN page's texts (one per line, in key order).
pub const TEXTS_META: &str = "chatwire-texts";

/// A language the page can be shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    En,
    ZhCn,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::En, Lang::ZhCn];

    /// Its BCP 47 tag, as `<html lang>` and the cookie carry it.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::ZhCn => "zh-CN",
        }
    }

    /// Its name in itself, as the switch lists it (the same in every language, so a reader finds their own).
    pub fn own_name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::ZhCn => "简体中文",
        }
    }

    /// The language whose tag this is exactly, as the page writes it (`<html lang>`, the switch's values): what the
    /// browser reads back needs no parsing of what other sites write.
    pub fn of_tag(tag: &str) -> Option<Lang> {
        Lang::ALL.into_iter().find(|lang| lang.tag() == tag)
    }

    /// The language a tag names, or the nearest one the page has: any `zh` but the traditional scripts and regions
    /// is Simplified Chinese, any `en` English. `None` for everything else.
    pub fn from_tag(tag: &str) -> Option<Lang> {
        let tag = tag.trim().to_ascii_lowercase().replace('_', "-");
        let mut parts = tag.split('-');
        match parts.next()? {
            "en" => Some(Lang::En),
            "zh" => {
                let traditional = parts.any(|part| matches!(part, "hant" | "tw" | "hk" | "mo"));
                (!traditional).then_some(Lang::ZhCn)
            }
            _ => None,
        }
    }

    /// The language for a request: the switch's cookie if it names one, else the first language of
    /// `Accept-Language` (by quality, then order) that the page has, else English.
    pub fn negotiate(cookie_header: Option<&str>, accept_language: Option<&str>) -> Lang {
        let picked = cookie_header.and_then(|header| {
            header.split(';').find_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                (name.trim() == LANGUAGE_COOKIE).then(|| Lang::from_tag(value)).flatten()
            })
        });
        picked.or_else(|| accept_language.and_then(Lang::from_accept_language)).unwrap_or_default()
    }

    fn from_accept_language(header: &str) -> Option<Lang> {
        let mut ranked: Vec<(f32, usize, Lang)> = header
            .split(',')
            .enumerate()
            .filter_map(|(order, item)| {
                let mut fields = item.split(';');
                let lang = Lang::from_tag(fields.next()?)?;
                let quality = fields
                    .find_map(|field| field.trim().strip_prefix("q="))
                    .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())?;
                (quality > 0.0).then_some((quality, order, lang))
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked.first().map(|&(_, _, lang)| lang)
    }
}

/// The language this page is drawn in. On the server, the request's (`app::shell` provides it); in the browser,
/// the page's, read reactively, so whatever is drawn from a text is drawn again when the switch changes it.
/// Without either (native tests, code run outside a render), English.
pub fn lang() -> Lang {
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    return browser::current();
    #[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
    use_context::<Lang>().unwrap_or_default()
}

/// A text in the page's language. Where a zh-CN text is missing (never for the shipped table: the parity test
/// checks it), its English one.
// `t`, `tr`, `fill` and `plural` are called from a few hundred places: out of line, each is a call there, not a
// copy of the body.
#[inline(never)]
pub fn t(key: Key) -> &'static str {
    let index = key as usize;
    let translated = match lang() {
        Lang::En => None,
        #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
        Lang::ZhCn => browser::zh_cn(index),
        #[cfg(feature = "ssr")]
        Lang::ZhCn => server::zh_cn(index),
        #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
        Lang::ZhCn => None,
    };
    translated.unwrap_or(EN[index])
}

/// A text as a signal, for a view: drawn again when the language changes. On the server, the text itself.
#[inline(never)]
pub fn tr(key: Key) -> Signal<&'static str> {
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    return Signal::derive(move || t(key));
    #[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
    Signal::stored(t(key))
}

/// A text with its `{name}` placeholders replaced by the values given; a placeholder with no value stays as it is.
#[inline(never)]
pub fn fill(key: Key, values: &[(&str, &str)]) -> String {
    fill_in(t(key), values)
}

fn fill_in(text: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| {
            let name = &after[..close];
            values.iter().find(|(n, _)| *n == name).map(|(_, value)| (*value, close))
        });
        match value {
            Some((value, close)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A count's text: `one` or `other` by the page language's plural rule (English: one for 1; Chinese has one
/// form), with `{n}` replaced by the count.
#[inline(never)]
pub fn plural(one: Key, other: Key, n: u64) -> String {
    let key = match lang() {
        Lang::En if n == 1 => one,
        Lang::En | Lang::ZhCn => other,
    };
    fill(key, &[("n", &n.to_string())])
}

/// A text shown for a while (a notice, the composer's note), kept as how to say it rather than as words: drawn
/// through [`LiveText::text`] in a view, it is said again in the new language when the switch changes it. Holds the
/// values it fills in (counts, names); a server's message, which stays English, is [`LiveText::fixed`].
#[derive(Clone)]
pub struct LiveText(std::sync::Arc<dyn Fn() -> String + Send + Sync>);

impl LiveText {
    pub fn new(say: impl Fn() -> String + Send + Sync + 'static) -> LiveText {
        LiveText(std::sync::Arc::new(say))
    }

    /// One text of the table.
    pub fn of(key: Key) -> LiveText {
        LiveText::new(move || t(key).to_owned())
    }

    /// A text of the table with its `{name}` placeholders filled in (`fill`).
    pub fn filled(key: Key, values: Vec<(&'static str, String)>) -> LiveText {
        LiveText::new(move || {
            let values: Vec<(&str, &str)> = values.iter().map(|(name, value)| (*name, value.as_str())).collect();
            fill(key, &values)
        })
    }

    /// Words that are the same in every language: a server's message, a file's name.
    pub fn fixed(text: String) -> LiveText {
        LiveText::new(move || text.clone())
    }

    /// The text in the page's language; read in a view, the view follows the language.
    pub fn text(&self) -> String {
        (self.0)()
    }
}

/// The texts' names and their English, for the parity test and the server's parser.
#[cfg(feature = "ssr")]
pub(crate) fn english() -> impl Iterator<Item = (&'static str, &'static str)> {
    keys::NAMES.iter().copied().zip(EN.iter().copied())
}

#[cfg(test)]
mod tests;
