//! The two languages stay in step: every key has a zh-CN text and no other, with the same placeholders; and the
//! request's language is picked as a browser would expect.

use super::{Lang, fill_in};

#[cfg(feature = "ssr")]
fn placeholders(text: &str) -> Vec<&str> {
    let mut names: Vec<&str> =
        text.split('{').skip(1).filter_map(|rest| rest.split_once('}').map(|(name, _)| name)).collect();
    names.sort_unstable();
    names
}

#[cfg(feature = "ssr")]
#[test]
fn every_key_has_a_zh_cn_text_with_the_same_placeholders_and_no_text_lacks_a_key() {
    let (texts, mut problems) = super::zh_cn_lines(super::ZH_CN_TEXT);
    for ((name, english), zh) in super::english().zip(&texts) {
        if let Some(zh) = zh
            && placeholders(english) != placeholders(zh)
        {
            problems.push(format!("{name}: {english:?} and {zh:?} name different placeholders"));
        }
    }
    assert!(problems.is_empty(), "src/i18n/zh-CN.txt:\n{}", problems.join("\n"));
}

#[cfg(feature = "ssr")]
#[test]
fn the_parity_check_names_a_missing_an_unknown_and_a_doubled_key() {
    let (_, problems) = super::zh_cn_lines("LanguageLabel = 语言\nLanguageLabel = 语言\nNoSuchKey = 无\nnot a pair\n");
    let all = problems.join("\n");
    assert!(all.contains("line 2: LanguageLabel again"), "{all}");
    assert!(all.contains("line 3: no such key in keys.rs: NoSuchKey"), "{all}");
    assert!(all.contains("line 4: not `Key = text`"), "{all}");
    let (_, problems) = super::zh_cn_lines("");
    assert!(problems.iter().any(|problem| problem == "LanguageLabel has no zh-CN text"), "{problems:?}");
}

#[test]
fn placeholders_are_filled_by_name_and_unknown_ones_are_left() {
    assert_eq!(fill_in("无法重命名会话：{error}", &[("error", "busy")]), "无法重命名会话：busy");
    assert_eq!(fill_in("{a} and {b}, {c}", &[("b", "2"), ("a", "1")]), "1 and 2, {c}");
    assert_eq!(fill_in("{ unbalanced", &[]), "{ unbalanced");
}

#[test]
fn the_page_reads_back_exactly_the_tags_it_writes() {
    for lang in Lang::ALL {
        assert_eq!(Lang::of_tag(lang.tag()), Some(lang));
    }
    assert_eq!(Lang::of_tag("zh"), None, "a browser's tag goes through from_tag");
}

#[test]
fn the_cookie_overrides_accept_language_which_overrides_english() {
    assert_eq!(Lang::negotiate(None, None), Lang::En);
    assert_eq!(Lang::negotiate(None, Some("zh-CN,zh;q=0.9,en;q=0.8")), Lang::ZhCn);
    assert_eq!(Lang::negotiate(None, Some("fr-FR,zh;q=0.5,en;q=0.7")), Lang::En, "by quality, not order");
    assert_eq!(Lang::negotiate(None, Some("fr, de")), Lang::En, "nothing the page has: English");
    assert_eq!(Lang::negotiate(None, Some("zh-TW, en;q=0.1")), Lang::En, "traditional Chinese is not zh-CN");
    assert_eq!(Lang::negotiate(None, Some("zh-Hans-SG")), Lang::ZhCn);
    assert_eq!(Lang::negotiate(None, Some("zh;q=0, en")), Lang::En, "q=0 refuses");
    assert_eq!(Lang::negotiate(Some("a=1; chatwire-lang=en"), Some("zh-CN")), Lang::En);
    assert_eq!(Lang::negotiate(Some("chatwire-lang=zh-CN"), None), Lang::ZhCn);
    assert_eq!(Lang::negotiate(Some("chatwire-lang=xx"), Some("zh")), Lang::ZhCn, "a cookie naming nothing: ignored");
}
