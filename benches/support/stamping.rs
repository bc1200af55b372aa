//! What the latency benches share: a provider that stamps each delta with its emit time, a chatwire instance served
//! on a loopback port in this process, and the reader that turns stamped lines into latency samples.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chatwire::runtime::agent::{Agent, AgentConfig};
use chatwire::runtime::builtin::AgentRuntime;
use chatwire::runtime::models::{ModelCatalog, ModelEntry};
use chatwire::runtime::provider::{ModelRequest, ModelStop, Provider, ProviderFuture, StreamEvent};
use chatwire::runtime::registry::{AgentEntry, Agents};
use chatwire::server::assets::SiteAssets;
use chatwire::server::chat::{Chat, ChatConfig};
use chatwire::server::http::{AppState, router};
use chatwire::server::security::Security;
use chatwire::store::Store;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Emits `events` text deltas `interval` apart (as fast as it can for a zero interval), each the emit time in
/// nanoseconds since `epoch`.
pub struct StampingProvider {
    pub epoch: Instant,
    pub events: usize,
    pub interval: Duration,
}

impl Provider for StampingProvider {
    fn name(&self) -> &str {
        "stamping"
    }

    fn stream<'a>(
        &'a self,
        _request: &'a ModelRequest,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
        _cancel: &'a CancellationToken,
    ) -> ProviderFuture<'a> {
        Box::pin(async move {
            let mut ticks = tokio::time::interval(self.interval.max(Duration::from_nanos(1)));
            for _ in 0..self.events {
                if !self.interval.is_zero() {
                    ticks.tick().await;
                } else {
                    tokio::task::yield_now().await;
                }
                sink(StreamEvent::TextDelta(format!("<{}>", self.epoch.elapsed().as_nanos())));
            }
            Ok(ModelStop::Stop)
        })
    }
}

/// One chatwire instance in this process, serving HTTP on a loopback port.
pub struct Instance {
    pub address: String,
    pub stop: CancellationToken,
    pub server: tokio::task::JoinHandle<std::io::Result<()>>,
}

pub async fn instance(store: Arc<dyn Store>, provider: StampingProvider, data: &std::path::Path) -> Instance {
    instance_with(store, provider, data, Vec::new(), None).await
}

/// `instance`, offering `more` agents beside the built-in one, `default` the agent of new sessions.
pub async fn instance_with(
    store: Arc<dyn Store>,
    provider: StampingProvider,
    data: &std::path::Path,
    more: Vec<AgentEntry>,
    default: Option<&str>,
) -> Instance {
    let agent = Agent::new(Arc::new(provider), AgentConfig::default());
    let entry = ModelEntry {
        name: "stamping".into(),
        provider: "stamping".into(),
        model: "stamping".into(),
        context_window: 128_000,
        agent: Arc::new(agent),
    };
    let models = Arc::new(ModelCatalog::new(vec![entry]).unwrap());
    let config = ChatConfig {
        data_dir: data.into(),
        workspace: None,
        keepalive: Duration::from_secs(15),
        lease_ttl: Duration::from_secs(15),
        // Off: these benches time streaming, and a checkpoint is taken before a run's first frame is streamed.
        checkpoint_file_limit: 0,
        attachments: chatwire::protocol::AttachmentLimits::default(),
    };
    let runtime: Arc<dyn chatwire::runtime::Runtime> = Arc::new(AgentRuntime::new(models.clone()));
    let mut entries = vec![AgentEntry { name: runtime.name().to_owned(), runtime }];
    entries.extend(more);
    let agents = Agents::new(entries, default).unwrap();
    let chat = Chat::open(store, agents, models, config).await.unwrap();
    let security = Arc::new(Security { token: None, allowed_hosts: vec!["127.0.0.1".into()] });
    let leptos = leptos::prelude::LeptosOptions::builder().output_name("chatwire").site_root("target/site").build();
    let state = AppState { leptos, assets: SiteAssets::detect("target/site"), chat: chat.clone(), security };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let stop = CancellationToken::new();
    let server = tokio::spawn(chatwire::server::listener::serve(
        listener,
        router(state),
        stop.clone().cancelled_owned(),
        chat.streams_end.clone(),
    ));
    Instance { address, stop, server }
}

pub async fn http_request(address: &str, method: &str, path: &str, body: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("the server accepts");
    stream.set_nodelay(true).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// Reads `stream` until `expected` delta lines have arrived; each line's stamp gives one latency sample (the final
/// message repeats every stamp; only `delta` frames count). Also returns when the last read arrived.
pub async fn read_stamps(mut stream: TcpStream, epoch: Instant, expected: usize) -> (Vec<Duration>, Duration) {
    let mut samples = Vec::with_capacity(expected);
    let mut buffer = vec![0_u8; 64 * 1024];
    let mut pending = Vec::new();
    let mut last = Duration::ZERO;
    while samples.len() < expected {
        let read = stream.read(&mut buffer).await.expect("the stream reads");
        if read == 0 {
            break;
        }
        let now = epoch.elapsed();
        last = now;
        pending.extend_from_slice(&buffer[..read]);
        let mut consumed = 0;
        while let Some(end) = pending[consumed..].iter().position(|&b| b == b'\n') {
            let line = std::str::from_utf8(&pending[consumed..consumed + end]).unwrap();
            consumed += end + 1;
            if !line.contains(r#""type":"delta""#) {
                continue;
            }
            let stamp = line.split('<').nth(1).and_then(|rest| rest.split('>').next()).expect("a stamped delta");
            samples.push(now.saturating_sub(Duration::from_nanos(stamp.parse().unwrap())));
        }
        pending.drain(..consumed);
    }
    (samples, last)
}
