//! A real etcd, started for one run: the store the API server writes to.
//!
//! Debian's `etcd-server`, on 127.0.0.1 with free ports and a temporary data directory,
//! stopped (and its directory removed) when the `Etcd` is dropped. The client speaks etcd's v3
//! API through its JSON gateway (`/v3/kv/range`, `/v3/kv/txn`): the same requests the API
//! server's storage layer makes over gRPC, with keys and values in base64.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct Etcd {
    child: Child,
    dir: PathBuf,
    pub url: String,
}

/// A free TCP port on the loopback interface.
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Etcd {
    /// Starts `binary` and waits (at most 20 s) until it answers.
    pub fn start(binary: &str) -> Result<Etcd> {
        let dir =
            std::env::temp_dir().join(format!("race-etcd-{}-{}", std::process::id(), free_port()?));
        std::fs::create_dir_all(&dir)?;
        let (client, peer) = (free_port()?, free_port()?);
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let child = Command::new(binary)
            .args(["--name", "race", "--data-dir"])
            .arg(dir.join("data"))
            .args([
                "--listen-client-urls",
                &url,
                "--advertise-client-urls",
                &url,
            ])
            .args([
                "--listen-peer-urls",
                &peer_url,
                "--initial-advertise-peer-urls",
                &peer_url,
            ])
            .args(["--initial-cluster", &format!("race={peer_url}")])
            .args(["--logger", "zap", "--log-level", "error"])
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(dir.join("etcd.log"))?))
            .spawn()
            .with_context(|| format!("cannot start {binary} (Debian package etcd-server)"))?;
        let etcd = Etcd { child, dir, url };
        let client = Client::new(&etcd.url)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while client.call("/health", None).is_err() {
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(etcd.dir.join("etcd.log")).unwrap_or_default();
                bail!("etcd did not answer on {} within 20 s: {log}", etcd.url);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(etcd)
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        // SIGTERM, then wait at most 5 s before SIGKILL.
        // SAFETY: kill(2) on the pid of our own child process.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A stored object: its JSON and etcd's `mod_revision` (the API server's resourceVersion).
#[derive(Debug, Clone)]
pub struct Stored {
    pub value: Vec<u8>,
    pub mod_revision: i64,
    pub create_revision: i64,
}

/// One writer's connection to etcd (blocking calls on a current-thread runtime).
pub struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    url: String,
}

#[derive(Deserialize)]
struct KeyValue {
    #[serde(default)]
    value: String,
    #[serde(default)]
    mod_revision: String,
    #[serde(default)]
    create_revision: String,
}

#[derive(Deserialize)]
struct RangeResponse {
    #[serde(default)]
    kvs: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct TxnResponse {
    /// proto3 JSON leaves out `false`.
    #[serde(default)]
    succeeded: bool,
}

impl Client {
    pub fn new(url: &str) -> Result<Client> {
        Ok(Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()?,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            url: url.to_string(),
        })
    }

    fn call(&self, path: &str, body: Option<Value>) -> Result<Vec<u8>> {
        let url = format!("{}{path}", self.url);
        self.runtime.block_on(async {
            let request = match body {
                Some(body) => self.http.post(&url).json(&body),
                None => self.http.get(&url),
            };
            let response = request.send().await?.error_for_status()?;
            Ok(response.bytes().await?.to_vec())
        })
    }

    /// The object at `key` as of `revision` (0: the latest), if it existed then.
    pub fn get(&self, key: &str, revision: i64) -> Result<Option<Stored>> {
        let mut body = json!({"key": B64.encode(key)});
        if revision > 0 {
            body["revision"] = json!(revision.to_string());
        }
        let response: RangeResponse =
            serde_json::from_slice(&self.call("/v3/kv/range", Some(body))?)?;
        let Some(kv) = response.kvs.into_iter().next() else {
            return Ok(None);
        };
        Ok(Some(Stored {
            value: B64.decode(kv.value)?,
            mod_revision: kv.mod_revision.parse()?,
            create_revision: kv.create_revision.parse()?,
        }))
    }

    /// Writes `value` at `key` only if the key's `mod_revision` is still `expected` (0: only if
    /// the key does not exist), as the API server's `GuaranteedUpdate` and `Create` commit.
    /// Returns whether it committed.
    pub fn put_if(&self, key: &str, value: &[u8], expected: i64) -> Result<bool> {
        let key = B64.encode(key);
        let compare = if expected == 0 {
            json!({"key": key, "target": "CREATE", "result": "EQUAL", "create_revision": "0"})
        } else {
            json!({"key": key, "target": "MOD", "result": "EQUAL", "mod_revision": expected.to_string()})
        };
        let body = json!({
            "compare": [compare],
            "success": [{"request_put": {"key": key, "value": B64.encode(value)}}],
        });
        let response: TxnResponse = serde_json::from_slice(&self.call("/v3/kv/txn", Some(body))?)?;
        Ok(response.succeeded)
    }

    /// Every version of `key`, oldest first: walks back from the latest, one read per version
    /// (the data dir is fresh and never compacted, so etcd keeps them all).
    pub fn history(&self, key: &str) -> Result<Vec<Stored>> {
        let mut versions = Vec::new();
        let mut next = self.get(key, 0)?;
        while let Some(version) = next {
            let before = version.mod_revision - 1;
            let created = version.create_revision;
            versions.push(version);
            next = if before >= created {
                self.get(key, before)?
            } else {
                None
            };
        }
        versions.reverse();
        Ok(versions)
    }
}
