//! (b) chatwire's own table (src/i18n): a `Key` enum and the English array from one `texts!` list, `t`/`tr` reading
//! a language signal, `fill` for values, `plural` for counts, and the Chinese texts fetched at the switch (one per
//! line, in key order) and leaked, never compiled in.

use std::cell::Cell;

use leptos::prelude::*;
use leptos::reactive::graph::Observer;
use wasm_bindgen::JsValue;

macro_rules! texts {
    ($($key:ident = $en:literal,)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Key {
            $($key,)*
        }
        const EN: &[&str] = &[$($en,)*];
    };
}
include!("../../texts/en.rs");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    En,
    ZhCn,
}

impl Lang {
    fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::ZhCn => "zh-CN",
        }
    }
    fn of_tag(tag: &str) -> Option<Lang> {
        [Lang::En, Lang::ZhCn].into_iter().find(|lang| lang.tag() == tag)
    }
}

thread_local! {
    static CURRENT: ArcRwSignal<Lang> = ArcRwSignal::new(Lang::En);
    static ZH_CN: Cell<Option<&'static [&'static str]>> = const { Cell::new(None) };
}

fn lang() -> Lang {
    CURRENT.with(|lang| if Observer::get().is_some() { lang.get() } else { lang.get_untracked() })
}

#[inline(never)]
pub fn t(key: Key) -> &'static str {
    let index = key as usize;
    let translated = match lang() {
        Lang::En => None,
        Lang::ZhCn => ZH_CN.with(Cell::get).and_then(|texts| texts.get(index).copied()),
    };
    translated.unwrap_or(EN[index])
}

#[inline(never)]
pub fn tr(key: Key) -> Signal<&'static str> {
    Signal::derive(move || t(key))
}

#[inline(never)]
pub fn fill(key: Key, values: &[(&str, &str)]) -> String {
    let text = t(key);
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

#[inline(never)]
pub fn plural(one: Key, other: Key, n: u64) -> String {
    let key = match lang() {
        Lang::En if n == 1 => one,
        Lang::En | Lang::ZhCn => other,
    };
    fill(key, &[("n", &n.to_string())])
}

fn texts_meta() -> Option<web_sys::Element> {
    document().query_selector("meta[name=chatwire-texts]").ok().flatten()
}

fn keep(texts: String) {
    let texts: &'static str = texts.leak();
    ZH_CN.with(|kept| kept.set(Some(Vec::leak(texts.split('\n').collect()))));
}

/// Before hydration: the page's language as the server rendered it, with its texts if it is zh-CN.
fn start() {
    let rendered = document().document_element().and_then(|root| root.get_attribute("lang"));
    let lang = rendered.as_deref().and_then(Lang::of_tag).unwrap_or_default();
    if lang == Lang::ZhCn
        && let Some(texts) = texts_meta().and_then(|meta| meta.get_attribute("content"))
    {
        keep(texts);
    }
    CURRENT.with(|current| current.set(lang));
}

fn switch(lang: Lang) {
    leptos::task::spawn_local(async move {
        if lang == Lang::ZhCn && ZH_CN.with(Cell::get).is_none() {
            let Some(path) = texts_meta().and_then(|meta| meta.get_attribute("data-src")) else {
                return;
            };
            let texts = match gloo_net::http::Request::get(&path).send().await {
                Ok(response) if response.ok() => response.text().await.ok(),
                Ok(_) | Err(_) => None,
            };
            let Some(texts) = texts else {
                web_sys::console::warn_1(&format!("could not load {path}").into());
                return;
            };
            keep(texts);
        }
        let cookie = format!("chatwire-lang={}; path=/; max-age=31536000; SameSite=Lax", lang.tag());
        let _ = js_sys::Reflect::set(&document(), &JsValue::from_str("cookie"), &JsValue::from_str(&cookie));
        if let Some(root) = document().document_element() {
            let _ = root.set_attribute("lang", lang.tag());
        }
        CURRENT.with(|current| current.set(lang));
    });
}

macro_rules! ctx {
    () => {
        ()
    };
}
macro_rules! tx {
    ($i18n:ident, $key:ident) => {{
        let _ = $i18n;
        tr(Key::$key)
    }};
}
macro_rules! ta {
    ($i18n:ident, $key:ident) => {
        tr(Key::$key)
    };
}
macro_rules! tname {
    ($i18n:ident, $key:ident, $title:ident) => {
        move || fill(Key::$key, &[(stringify!($title), &$title.get())])
    };
}
macro_rules! tplural {
    ($i18n:ident, Files, $count:ident) => {
        move || plural(Key::FilesOne, Key::FilesOther, $count.get())
    };
}
macro_rules! switch {
    ($i18n:ident) => {
        move |_| switch(if lang() == Lang::En { Lang::ZhCn } else { Lang::En })
    };
}

include!("../../view.rs");

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    start();
    leptos::mount::hydrate_body(Page);
}
