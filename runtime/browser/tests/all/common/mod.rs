//! Shared fixtures for the browser tests: one tokio runtime, sandbox and pool per test binary.
#![allow(clippy::unwrap_used, dead_code)] // test helpers may unwrap; not every binary uses every helper

use std::sync::{Arc, OnceLock};

use wrl_browser::{AllowList, BrowserPool, EpisodeCfg, EpisodeSpec, PoolCfg};
use wrl_sandbox::Sandbox;

pub struct Fixture {
    pub rt: tokio::runtime::Runtime,
    pub sandbox: Arc<Sandbox>,
    pub pool: BrowserPool,
}

/// Builds a fixture: sandbox with seed 0, pool allowing only the sandbox.
pub fn fixture(concurrency: usize, tweak: impl FnOnce(&mut PoolCfg)) -> Fixture {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (sandbox, pool) = rt.block_on(async {
        let sandbox = Arc::new(Sandbox::start(0, 0).await.unwrap());
        let mut cfg = PoolCfg {
            max_concurrent: concurrency,
            allow: AllowList::only([format!("127.0.0.1:{}", sandbox.addr().port())]),
            ..PoolCfg::default()
        };
        tweak(&mut cfg);
        let pool = BrowserPool::launch(cfg).await.unwrap();
        (sandbox, pool)
    });
    Fixture { rt, sandbox, pool }
}

pub fn shared() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| fixture(6, |_| {}))
}

impl Fixture {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.sandbox.base_url())
    }

    pub async fn lab(&self) -> wrl_browser::Episode {
        self.pool
            .episode(
                EpisodeSpec::url("lab", self.url("/lab/")),
                EpisodeCfg { max_steps: 100, ..EpisodeCfg::default() },
            )
            .await
            .unwrap()
    }
}

/// Whether `pid` is running (a zombie waiting to be reaped counts as gone).
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        }
        Err(_) => false,
    }
}

/// `pid` and all its descendants now running.
pub fn tree(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if let Some(pp) = fields.get(1).and_then(|s| s.parse::<u32>().ok()) {
            parent_of.push((p, pp));
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let cur = out[i];
        out.extend(parent_of.iter().filter(|(_, pp)| *pp == cur).map(|(p, _)| *p));
        i += 1;
    }
    out.retain(|p| running(*p));
    out
}
