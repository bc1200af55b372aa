//! The language in the browser: the page's (`<html lang>`, as the server rendered it), in a signal that every text
//! read in a view tracks, and the zh-CN texts, read from the page or fetched when the switch first asks for them.

use std::cell::Cell;

use leptos::prelude::*;
use leptos::reactive::graph::Observer;
use wasm_bindgen::JsValue;

use super::{LANGUAGE_COOKIE, Lang, TEXTS_META};

thread_local! {
    static CURRENT: ArcRwSignal<Lang> = ArcRwSignal::new(Lang::En);
    /// The zh-CN texts by key position, once known; leaked, since a page keeps them until it is closed.
    static ZH_CN: Cell<Option<&'static [&'static str]>> = const { Cell::new(None) };
}

pub(super) fn current() -> Lang {
    // Tracked where something is drawn from it; read plainly elsewhere (a handler, a task), where tracking would
    // only log a warning.
    CURRENT.with(|lang| if Observer::get().is_some() { lang.get() } else { lang.get_untracked() })
}

pub(super) fn zh_cn(index: usize) -> Option<&'static str> {
    ZH_CN.with(Cell::get).and_then(|texts| texts.get(index).copied())
}

fn texts_meta() -> Option<web_sys::Element> {
    document().query_selector(&format!("meta[name={TEXTS_META}]")).ok().flatten()
}

fn keep(texts: String) {
    let texts: &'static str = texts.leak();
    ZH_CN.with(|kept| kept.set(Some(Vec::leak(texts.split('\n').collect()))));
}

/// Before hydration: the language the server rendered the page in, with its texts, so that hydration draws the
/// same words the server did.
pub fn start() {
    let rendered = document().document_element().and_then(|root| root.get_attribute("lang"));
    let lang = rendered.as_deref().and_then(Lang::of_tag).unwrap_or_default();
    if lang == Lang::ZhCn
        && let Some(texts) = texts_meta().and_then(|meta| meta.get_attribute("content"))
    {
        keep(texts);
    }
    CURRENT.with(|current| current.set(lang));
}

/// The settings' switch: fetches the zh-CN texts the first time they are needed, then draws the page again in
/// `lang` (no reload: what the page holds stays), and remembers the choice in a cookie for the next page load.
pub fn switch(lang: Lang) {
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
                web_sys::console::warn_1(&format!("chatwire: could not load {path}; the page stays as it is").into());
                return;
            };
            keep(texts);
        }
        // A year; `Lax`, so the first page of a visit from a link is in the language chosen too.
        let cookie = format!("{LANGUAGE_COOKIE}={}; path=/; max-age=31536000; SameSite=Lax", lang.tag());
        let _ = js_sys::Reflect::set(&document(), &JsValue::from_str("cookie"), &JsValue::from_str(&cookie));
        if let Some(root) = document().document_element() {
            let _ = root.set_attribute("lang", lang.tag());
        }
        CURRENT.with(|current| current.set(lang));
    });
}
