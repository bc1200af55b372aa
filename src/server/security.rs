//! Safe defaults for a server that can run shell commands (DESIGN.md §7): the access token and its cookie,
//! the Host allow-list (DNS rebinding), foreign Origins, JSON-only state changes, and security headers.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE, COOKIE, HOST, LOCATION, ORIGIN,
    REFERRER_POLICY, SET_COOKIE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

use super::error::ApiError;
use super::extract::MAX_BODY_BYTES;

pub const COOKIE_NAME: &str = "chatwire_token";

/// The page's policy when no per-response one (with the script nonce) was set.
const DEFAULT_CSP: &str = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

#[derive(Debug, Clone)]
pub struct Security {
    /// `None`: no authentication (allowed on loopback only).
    pub token: Option<String>,
    /// Host names (without port) this server answers to.
    pub allowed_hosts: Vec<String>,
}

/// Files the browser fetches without the page's credentials: the icon, and what installing the app reads (the
/// manifest is fetched with credentials omitted) or registers (the service worker).
const PUBLIC_FILES: [&str; 6] =
    ["/favicon.svg", "/manifest.webmanifest", "/sw.js", "/icon-192.png", "/icon-512.png", "/icon-maskable-512.png"];

/// Routes anyone may reach: the health check, the static files the login page itself needs, and the app's
/// install files.
pub fn is_public(path: &str) -> bool {
    path == "/api/health" || path.starts_with("/pkg/") || PUBLIC_FILES.contains(&path)
}

fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':')
        .map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host })
}

impl Security {
    fn host_allowed(&self, request: &Request) -> Option<String> {
        let host = request.headers().get(HOST).and_then(|h| h.to_str().ok())?;
        let name = host_name(host).to_ascii_lowercase();
        self.allowed_hosts.contains(&name).then(|| host.to_owned())
    }

    fn presented_token<'a>(&self, request: &'a Request) -> Option<&'a str> {
        let bearer = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        bearer.or_else(|| {
            request
                .headers()
                .get_all(COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(';'))
                .filter_map(|pair| pair.trim().split_once('='))
                .find(|(name, _)| *name == COOKIE_NAME)
                .map(|(_, value)| value)
        })
    }

    fn authorized(&self, request: &Request) -> bool {
        match &self.token {
            None => true,
            Some(token) => self.presented_token(request).is_some_and(|presented| constant_time_eq(presented, token)),
        }
    }
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0_u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a request does not say unambiguously which host and origin it is for, if it does not (RFC 9112 §3.2: more
/// than one `Host`, or an absolute-form target naming another host, is a 400). The allow-list checks one `Host`
/// and one `Origin`; a second one must not slip past it.
fn ambiguous_target(request: &Request) -> Option<String> {
    let headers = request.headers();
    if headers.get_all(HOST).iter().nth(1).is_some() {
        return Some("the request has more than one Host header".into());
    }
    if headers.get_all(ORIGIN).iter().nth(1).is_some() {
        return Some("the request has more than one Origin header".into());
    }
    let authority = request.uri().authority()?;
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    (!host.eq_ignore_ascii_case(authority.as_str()))
        .then(|| format!("the request target names {authority}, its Host header {host:?}"))
}

/// The one middleware in front of every route.
pub async fn guard(State(security): State<Arc<Security>>, request: Request, next: Next) -> Response {
    if let Some(problem) = ambiguous_target(&request) {
        return ApiError::BadRequest(problem).into_response();
    }
    let path = request.uri().path().to_owned();
    let is_api = path.starts_with("/api/");
    let Some(host) = security.host_allowed(&request) else {
        return ApiError::Forbidden("this Host is not allowed; add it with --allowed-host".into()).into_response();
    };
    if let Some(origin) = request.headers().get(ORIGIN).and_then(|v| v.to_str().ok())
        && origin != format!("http://{host}")
        && origin != format!("https://{host}")
    {
        return ApiError::Forbidden(format!("requests from {origin} are not allowed")).into_response();
    }
    let announced = request.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    // An upload has a limit of its own, which its route checks.
    if announced.is_some_and(|length: usize| length > MAX_BODY_BYTES) && path != "/api/attachments" {
        // Refuse before reading: a body this size is never accepted, so taking it in would only waste time.
        return ApiError::TooLarge(MAX_BODY_BYTES).into_response();
    }
    if !is_public(&path) {
        if !is_api
            && request.method() == Method::GET
            && let Some(response) = exchange_token(&security, &request)
        {
            return response;
        }
        if !security.authorized(&request) {
            return if is_api {
                ApiError::Unauthorized("missing or wrong access token".into()).into_response()
            } else {
                login_page()
            };
        }
        let changes_state = matches!(*request.method(), Method::POST | Method::PUT | Method::PATCH);
        // Neither type is one a cross-site form can send, so a request with it from another site is preflighted
        // (and refused) first. An upload is raw bytes; its own type goes in its query.
        let (wanted, with) = match path == "/api/attachments" {
            true => ("application/octet-stream", "send the file as Content-Type: application/octet-stream"),
            false => ("application/json", "send the body as Content-Type: application/json"),
        };
        let is_wanted = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(wanted));
        if is_api && changes_state && !is_wanted {
            return ApiError::UnsupportedMediaType(with.into()).into_response();
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if !headers.contains_key(CONTENT_SECURITY_POLICY) {
        headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(DEFAULT_CSP));
    }
    response
}

/// `GET /any/page?token=…` with the right token: set the cookie and redirect to the same page without the token.
fn exchange_token(security: &Security, request: &Request) -> Option<Response> {
    let token = security.token.as_ref()?;
    let query = request.uri().query()?;
    let presented = query.split('&').filter_map(|pair| pair.split_once('=')).find(|(k, _)| *k == "token")?.1;
    if !constant_time_eq(presented, token) {
        return Some(login_page());
    }
    let rest: Vec<&str> = query.split('&').filter(|pair| !pair.starts_with("token=")).collect();
    let location = if rest.is_empty() {
        request.uri().path().to_owned()
    } else {
        format!("{}?{}", request.uri().path(), rest.join("&"))
    };
    let cookie = format!("{COOKIE_NAME}={token}; HttpOnly; SameSite=Strict; Path=/");
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(LOCATION, HeaderValue::from_str(&location).ok()?);
    headers.insert(SET_COOKIE, HeaderValue::from_str(&cookie).ok()?);
    Some(response)
}

fn login_page() -> Response {
    let body = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>chatwire</title></head><body>\
        <h1>chatwire needs its access token</h1><p>Open the link chatwire printed when it started \
        (it ends in <code>?token=…</code>). The token is then kept in a cookie.</p></body></html>";
    (StatusCode::UNAUTHORIZED, Html(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_drop_the_port() {
        assert_eq!(host_name("127.0.0.1:3000"), "127.0.0.1");
        assert_eq!(host_name("[::1]:3000"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
    }
}
