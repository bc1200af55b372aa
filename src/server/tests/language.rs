//! The page in the reader's language: `Accept-Language` picks it for the first paint, the switch's cookie
//! overrides it, a zh-CN page carries its texts for hydration, and the API keeps speaking English.

use axum::body::Body;
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, VARY};

use super::app::{TestApp, body_bytes, json_body, request};
use crate::i18n::{LANGUAGE_COOKIE, zh_cn_wire};

async fn page(app: &TestApp, headers: &[(&str, &str)]) -> (String, String) {
    let mut builder = request("GET", "/");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = app.call(builder.body(Body::empty()).expect("a valid request")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let vary = response.headers().get(VARY).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    (String::from_utf8(body_bytes(response).await).expect("UTF-8 HTML"), vary)
}

/// The `content` of the page's texts `<meta>`, unescaped as a browser would.
fn inlined_texts(html: &str) -> String {
    let meta = html.split("<meta name=\"chatwire-texts\"").nth(1).expect("the page names where its texts are");
    let content = meta.split("content=\"").nth(1).expect("a content attribute").split('"').next().unwrap_or_default();
    content.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

fn has_chinese(text: &str) -> bool {
    text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

#[tokio::test]
async fn the_page_speaks_the_browsers_language_unless_the_switch_said_otherwise() {
    let app = TestApp::playing(r#"{"delayMs": 0, "turns": [{"text": "Hi."}]}"#).await;
    let (english, vary) = page(&app, &[]).await;
    assert!(english.contains("<html lang=\"en\""), "{english:.300}");
    assert!(english.contains(">New chat<") && english.contains("What should the agent do?"), "the sidebar in English");
    assert!(!has_chinese(&english.replace("简体中文", "")), "an English page carries no Chinese but the switch's name");
    assert_eq!(inlined_texts(&english), "", "an English page inlines no table");
    assert!(vary.contains("Accept-Language") && vary.contains("Cookie"), "caches keep one page per language: {vary}");

    let (chinese, _) = page(&app, &[("accept-language", "zh-CN,zh;q=0.9,en;q=0.8")]).await;
    assert!(chinese.contains("<html lang=\"zh-CN\""), "{chinese:.300}");
    assert!(chinese.contains(">新对话<") && !chinese.contains(">New chat<"), "the sidebar in Chinese");
    assert!(chinese.contains("要让智能体做什么？") && !chinese.contains("What should the agent do?"));
    assert!(chinese.contains("placeholder=\"向智能体提问"), "the message box's placeholder in Chinese");
    assert_eq!(inlined_texts(&chinese), zh_cn_wire().0, "a zh-CN page inlines the table hydration reads");

    let cookie = format!("{LANGUAGE_COOKIE}=en");
    let (switched, _) = page(&app, &[("accept-language", "zh-CN"), ("cookie", &cookie)]).await;
    assert!(switched.contains("<html lang=\"en\"") && switched.contains(">New chat<"), "the cookie wins");
    let cookie = format!("other=1; {LANGUAGE_COOKIE}=zh-CN");
    let (switched, _) = page(&app, &[("accept-language", "en-US"), ("cookie", &cookie)]).await;
    assert!(switched.contains("<html lang=\"zh-CN\"") && switched.contains(">新对话<"), "either way");
}

#[tokio::test]
async fn the_zh_cn_table_is_served_for_good_under_its_hash_and_the_api_stays_english() {
    let app = TestApp::playing(r#"{"delayMs": 0, "turns": [{"text": "Hi."}]}"#).await;
    let (english, _) = page(&app, &[]).await;
    let (texts, path) = zh_cn_wire();
    assert!(english.contains(&format!("data-src=\"{path}\"")), "an English page says where to fetch zh-CN");
    let response = app.call(request("GET", path).body(Body::empty()).expect("a valid request")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert!(header(CONTENT_TYPE).starts_with("text/plain"), "{}", header(CONTENT_TYPE));
    assert!(header(CACHE_CONTROL).contains("immutable"), "{}", header(CACHE_CONTROL));
    let served = String::from_utf8(body_bytes(response).await).expect("UTF-8");
    assert_eq!(&served, texts);
    assert!(served.lines().any(|line| line == "新对话"));

    let missing = request("GET", "/api/sessions/no-such-session")
        .header("accept-language", "zh-CN")
        .header("cookie", format!("{LANGUAGE_COOKIE}=zh-CN"))
        .body(Body::empty())
        .expect("a valid request");
    let response = app.call(missing).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body = json_body(response).await;
    let message = body["message"].as_str().expect("an error message");
    assert!(!message.is_empty() && message.is_ascii(), "the API's errors stay English: {message}");
}
