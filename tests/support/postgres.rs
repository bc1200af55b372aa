//! A PostgreSQL server for the tests: Debian's `postgresql` binaries, `initdb` in a temporary directory, listening
//! on a Unix socket only. As root, the server runs as `nobody` (`initdb` refuses root). It is started once per test
//! process and dies with it; each test gets a database of its own.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The user `nobody`, who runs the server when the tests run as root.
const NOBODY: u32 = 65534;

pub struct TestServer {
    socket_dir: PathBuf,
    port: u16,
    user: String,
    _dir: tempfile::TempDir,
}

static SERVER: OnceLock<Result<TestServer, String>> = OnceLock::new();
static NEXT_DATABASE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The test server, started on first use. Fails (with what to install) when Debian's `postgresql` is missing.
pub fn server() -> &'static TestServer {
    match SERVER.get_or_init(start) {
        Ok(server) => server,
        Err(why) => panic!("no PostgreSQL for the tests: {why} (`./x test` installs Debian's postgresql)"),
    }
}

impl TestServer {
    /// A connection string for a new, empty database.
    pub async fn fresh_database(&self) -> String {
        let n = NEXT_DATABASE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("test_{}_{n}", std::process::id());
        let admin = self.url("postgres");
        let (client, connection) =
            tokio_postgres::connect(&admin, tokio_postgres::NoTls).await.expect("the server takes connections");
        tokio::spawn(connection);
        client.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("a test database is created");
        self.url(&name)
    }

    fn url(&self, database: &str) -> String {
        format!("host={} port={} user={} dbname={database}", self.socket_dir.display(), self.port, self.user)
    }
}

fn bin_dir() -> Result<PathBuf, String> {
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if dir.join("initdb").exists() {
            return Ok(dir);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "no /usr/lib/postgresql".to_owned())?
        .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().ok_or_else(|| "no initdb under /usr/lib/postgresql".to_owned())
}

fn as_server_user(command: &mut Command) -> &mut Command {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        command.uid(NOBODY).gid(NOBODY);
    }
    command
}

fn start() -> Result<TestServer, String> {
    let bin = bin_dir()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    // SAFETY: geteuid has no preconditions; chown on our own fresh directory.
    let root = unsafe { libc::geteuid() } == 0;
    let user = if root { "nobody".to_owned() } else { std::env::var("USER").unwrap_or_else(|_| "postgres".into()) };
    if root {
        let path = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: a valid C string naming a directory we created.
        if unsafe { libc::chown(path.as_ptr(), NOBODY, NOBODY) } != 0 {
            return Err(format!("chown {}: {}", dir.path().display(), std::io::Error::last_os_error()));
        }
    }
    let data = dir.path().join("data");
    let initdb = as_server_user(Command::new(bin.join("initdb")).arg("-D").arg(&data))
        .args(["-A", "trust", "-U", &user, "--no-sync", "-E", "UTF8"])
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("initdb: {e}"))?;
    if !initdb.status.success() {
        return Err(format!("initdb failed: {}", String::from_utf8_lossy(&initdb.stderr)));
    }
    let port = 5432;
    let socket_dir = dir.path().to_owned();
    spawn_postmaster(&bin.join("postgres"), &data, &socket_dir, port)?;
    wait_ready(&bin.join("pg_isready"), &socket_dir, port)?;
    Ok(TestServer { socket_dir, port, user, _dir: dir })
}

/// Starts the server from a thread that lives as long as the test process, with the parent-death signal set, so
/// the server is killed when the tests end however they end.
fn spawn_postmaster(postgres: &Path, data: &Path, socket_dir: &Path, port: u16) -> Result<(), String> {
    let (started, outcome) = std::sync::mpsc::channel();
    let (postgres, data, socket_dir) = (postgres.to_owned(), data.to_owned(), socket_dir.to_owned());
    std::thread::Builder::new()
        .name("postgres-for-tests".into())
        .spawn(move || {
            let mut command = Command::new(&postgres);
            as_server_user(&mut command)
                .arg("-D")
                .arg(&data)
                .arg("-k")
                .arg(&socket_dir)
                .args(["-p", &port.to_string(), "-c", "listen_addresses=", "-c", "fsync=off"])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // SAFETY: prctl in the child between fork and exec, async-signal-safe.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            match command.spawn() {
                Ok(mut child) => {
                    let _ = started.send(Ok(()));
                    let _ = child.wait();
                    // The server exited on its own: nothing more to do here, but the thread must outlive the tests.
                    loop {
                        std::thread::park();
                    }
                }
                Err(error) => {
                    let _ = started.send(Err(format!("starting postgres: {error}")));
                }
            }
        })
        .map_err(|e| e.to_string())?;
    outcome.recv().map_err(|e| e.to_string())?
}

/// Waits until the server accepts connections: its socket appears before it has finished starting up, and a
/// connection then is refused with "the database system is starting up".
fn wait_ready(pg_isready: &Path, socket_dir: &Path, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let ready = Command::new(pg_isready)
            .arg("-h")
            .arg(socket_dir)
            .args(["-p", &port.to_string(), "-t", "1", "-q"])
            .status()
            .map_err(|e| format!("pg_isready: {e}"))?;
        if ready.success() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("the server did not accept connections within 30 s".into())
}
