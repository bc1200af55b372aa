//! (a) No i18n: the page's texts are `&'static str` literals (the table's consts, of which only the ones drawn are
//! kept), and no switch: what the page costs with no i18n at all.
#![allow(non_upper_case_globals)]

use leptos::prelude::*;

#[allow(dead_code)]
mod texts {
    macro_rules! texts {
        ($($key:ident = $en:literal,)*) => { $(pub const $key: &str = $en;)* };
    }
    include!("../../texts/en.rs");
}

macro_rules! ctx {
    () => {
        ()
    };
}
macro_rules! tx {
    ($i18n:ident, $key:ident) => {{
        let _ = $i18n;
        texts::$key
    }};
}
macro_rules! ta {
    ($i18n:ident, $key:ident) => {
        texts::$key
    };
}
macro_rules! tname {
    ($i18n:ident, RenameNamed, $title:ident) => {
        move || format!("Rename {}", $title.get())
    };
}
macro_rules! tplural {
    ($i18n:ident, Files, $count:ident) => {
        move || match $count.get() {
            1 => String::from("1 file"),
            n => format!("{n} files"),
        }
    };
}
macro_rules! switch {
    ($i18n:ident) => {
        move |_| ()
    };
}

include!("../../view.rs");

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    leptos::mount::hydrate_body(Page);
}
