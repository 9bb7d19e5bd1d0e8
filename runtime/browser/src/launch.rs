//! Finding and launching the system Chromium (never downloaded), or connecting to a remote one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::{Browser, BrowserConfig, Handler};

/// Errors launching or reaching a browser. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// No Chromium binary found.
    #[error(
        "Chromium not found ({0}). Install it with `apt-get install chromium` (Debian) or set WRL_CHROMIUM to the browser binary"
    )]
    NotFound(String),
    /// The process started but CDP never came up, or the connection failed.
    #[error("cannot start Chromium at {path}: {message}")]
    Launch {
        /// Binary or URL.
        path: String,
        /// Cause.
        message: String,
    },
    /// A temporary directory could not be created.
    #[error("cannot create a user-data-dir for Chromium: {0}")]
    TempDir(std::io::Error),
}

/// Chromium flags (without leading dashes: chromiumoxide adds them).
pub const FLAGS: [&str; 9] = [
    "disable-gpu",
    "disable-quic",
    "no-first-run",
    "disable-background-networking",
    "disable-component-update",
    "disable-sync",
    "disable-features=Translate,MediaRouter,OptimizationHints",
    "mute-audio",
    "hide-scrollbars",
];

/// Resolves the Chromium binary: `explicit`, then `$WRL_CHROMIUM`, then `chromium`,
/// `chromium-browser` or `google-chrome` on `PATH`, then `/usr/lib/chromium/chromium`.
pub fn find_chromium(explicit: Option<&Path>) -> Result<PathBuf, LaunchError> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(LaunchError::NotFound(format!("{} does not exist", p.display())))
        };
    }
    if let Some(env) = std::env::var_os("WRL_CHROMIUM") {
        let p = PathBuf::from(&env);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(LaunchError::NotFound(format!("WRL_CHROMIUM={} does not exist", p.display())))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    let fallback = PathBuf::from("/usr/lib/chromium/chromium");
    if fallback.is_file() {
        return Ok(fallback);
    }
    Err(LaunchError::NotFound("not on PATH and WRL_CHROMIUM is unset".into()))
}

/// A launched or connected browser with its handler.
pub struct Launched {
    /// The browser.
    pub browser: Browser,
    /// Its CDP handler (poll it on a task).
    pub handler: Handler,
    /// The user-data-dir, deleted on drop (None for remote browsers).
    pub dir: Option<tempfile::TempDir>,
}

/// Launches headless Chromium with a fresh user-data-dir.
pub async fn launch(
    binary: &Path,
    viewport: (u32, u32),
    scale: f64,
    extra_args: &[String],
    request_timeout: Duration,
) -> Result<Launched, LaunchError> {
    let dir =
        tempfile::Builder::new().prefix("wrl-chromium-").tempdir().map_err(LaunchError::TempDir)?;
    let mut args: Vec<String> = FLAGS.iter().map(|s| s.to_string()).collect();
    args.extend(extra_args.iter().map(|a| a.trim_start_matches('-').to_string()));
    let cfg = BrowserConfig::builder()
        .chrome_executable(binary)
        .no_sandbox()
        .user_data_dir(dir.path())
        .args(args)
        .viewport(Viewport {
            width: viewport.0,
            height: viewport.1,
            device_scale_factor: Some(scale),
            emulating_mobile: false,
            is_landscape: false,
            has_touch: false,
        })
        .window_size(viewport.0, viewport.1)
        .request_timeout(request_timeout)
        .launch_timeout(Duration::from_secs(30))
        .build()
        .map_err(|message| LaunchError::Launch { path: binary.display().to_string(), message })?;
    let (browser, handler) = Browser::launch(cfg).await.map_err(|e| LaunchError::Launch {
        path: binary.display().to_string(),
        message: e.to_string(),
    })?;
    Ok(Launched { browser, handler, dir: Some(dir) })
}

/// Connects to a running browser by its CDP WebSocket URL (`ws://host:port/devtools/browser/…`)
/// or its HTTP endpoint (`http://host:port`), with the configured viewport.
pub async fn connect(
    url: &str,
    viewport: (u32, u32),
    scale: f64,
    request_timeout: Duration,
) -> Result<Launched, LaunchError> {
    let cfg = chromiumoxide::handler::HandlerConfig {
        viewport: Some(Viewport {
            width: viewport.0,
            height: viewport.1,
            device_scale_factor: Some(scale),
            emulating_mobile: false,
            is_landscape: false,
            has_touch: false,
        }),
        request_timeout,
        ..Default::default()
    };
    let (browser, handler) = Browser::connect_with_config(url.to_string(), cfg)
        .await
        .map_err(|e| LaunchError::Launch { path: url.to_string(), message: e.to_string() })?;
    Ok(Launched { browser, handler, dir: None })
}
