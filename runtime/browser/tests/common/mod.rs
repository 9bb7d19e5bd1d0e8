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
