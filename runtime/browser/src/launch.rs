//! Finding and launching the system Chromium (never downloaded), or connecting to a remote one.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::{Browser, Handler};

use crate::process::{self, ChromiumProcess};

/// Errors launching or reaching a browser. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// No Chromium binary found.
    #[error(
        "Chromium not found ({0}). Install it with `apt-get install chromium-headless-shell` (Debian; `chromium` works too) or set WRL_CHROMIUM to the browser binary"
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

/// Chromium flags of ours (written without leading dashes). `renderer-process-limit=1`: this
/// Chromium starts a new renderer process for almost every navigation (28 renderers for 40
/// same-site navigations in 4 contexts, Playwright's launch alike); at the limit it reuses a
/// process the navigation may use instead (never across browser contexts, and never against
/// site isolation: the limit is soft). That takes 12–27 % of the CPU per benchmark step.
/// `RenderDocument` off: Chromium then keeps a tab's frame host across same-site navigations
/// instead of building a new one (and its renderer-side frame and compositor) for every
/// document, as it did before that feature; pages see no difference. On the headless shell
/// that takes a fifth to a quarter of the CPU per benchmark step (docs/benchmarks.md).
/// `CDPScreenshotNewSurface`: `Page.captureScreenshot` gives the page a new surface and copies
/// the first frame drawn into it, instead of forcing a redraw and waiting for that frame to be
/// presented before it asks for a copy of the next one. Still a frame drawn after the request
/// (tests/all/actions.rs `screenshots_show_the_page_as_it_is_now`), one frame sooner: a step with a
/// screenshot takes a quarter less time. Playwright launches with it too.
pub const FLAGS: [&str; 11] = [
    "disable-gpu",
    "disable-quic",
    "no-first-run",
    "disable-background-networking",
    "disable-component-update",
    "disable-sync",
    "disable-features=Translate,TranslateUI,MediaRouter,OptimizationHints,RenderDocument",
    "mute-audio",
    "hide-scrollbars",
    "renderer-process-limit=1",
    "enable-features=CDPScreenshotNewSurface",
];

/// Resolves the Chromium binary: `explicit`, then `$WRL_CHROMIUM`, then the headless shell
/// (Debian's `chromium-headless-shell` package: [`HEADLESS_SHELL`], then
/// `chromium-headless-shell` on `PATH`), then `chromium`, `chromium-browser` or `google-chrome`
/// on `PATH`, then `/usr/lib/chromium/chromium`.
///
/// The headless shell is Chromium's build for automation (what Playwright and Puppeteer run for
/// headless by default): the same engine and protocol without the desktop browser's layers. On
/// the benchmark loop it takes half the CPU per step of `chromium --headless`
/// (docs/benchmarks.md).
pub fn find_chromium(explicit: Option<&Path>) -> Result<PathBuf, LaunchError> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(LaunchError::NotFound(format!("{} does not exist", p.display())))
        };
    }
    // Set but empty (`WRL_CHROMIUM=`) reads as unset.
    if let Some(env) = std::env::var_os("WRL_CHROMIUM").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(&env);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(LaunchError::NotFound(format!("WRL_CHROMIUM={} does not exist", p.display())))
        };
    }
    let shell = PathBuf::from(HEADLESS_SHELL);
    if shell.is_file() {
        return Ok(shell);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for names in
        [&["chromium-headless-shell"][..], &["chromium", "chromium-browser", "google-chrome"]]
    {
        for dir in std::env::split_paths(&path) {
            for name in names {
                let p = dir.join(name);
                if p.is_file() {
                    return Ok(p);
                }
            }
        }
    }
    let fallback = PathBuf::from("/usr/lib/chromium/chromium");
    if fallback.is_file() {
        return Ok(fallback);
    }
    Err(LaunchError::NotFound("not on PATH and WRL_CHROMIUM is unset".into()))
}

/// Debian's headless shell binary. Its `/usr/bin/chromium-headless-shell` wrapper script does
/// not `exec` it, so the browser would be the wrapper's child, not ours.
pub const HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";

/// A launched or connected browser with its handler.
pub struct Launched {
    /// The browser.
    pub browser: Browser,
    /// Its CDP handler (poll it on a task).
    pub handler: Handler,
    /// The Chromium process with its user-data-dir, killed and deleted on drop (None for
    /// remote browsers).
    pub process: Option<ChromiumProcess>,
}

/// The flags every local Chromium gets before [`FLAGS`] and the caller's: the defaults
/// chromiumoxide (after Puppeteer) launches with, headless, without the sandbox (containers),
/// with DevTools on a free port written to `DevToolsActivePort`.
const BASE_FLAGS: &[&str] = &[
    "disable-background-timer-throttling",
    "disable-backgrounding-occluded-windows",
    "disable-breakpad",
    "disable-client-side-phishing-detection",
    "disable-component-extensions-with-background-pages",
    "disable-default-apps",
    "disable-dev-shm-usage",
    "disable-extensions",
    "disable-hang-monitor",
    "disable-ipc-flooding-protection",
    "disable-popup-blocking",
    "disable-prompt-on-repost",
    "disable-renderer-backgrounding",
    "enable-features=NetworkService,NetworkServiceInProcess",
    "force-color-profile=srgb",
    "metrics-recording-only",
    "enable-automation",
    "password-store=basic",
    "use-mock-keychain",
    "lang=en_US",
    "no-sandbox",
    "disable-setuid-sandbox",
    "headless",
    "remote-debugging-port=0",
    "hide-scrollbars",
    "mute-audio",
];

/// The flags that keep a browser's traffic inside the allow-list (docs/run.md): WebRTC may
/// send nothing but through the proxy (no UDP at all: STUN and TURN over UDP cannot be
/// proxied), and no speculative loads (prefetch, prerender, preconnect) are made for a page.
/// The proxy is the guarantee; these leave it nothing it cannot see. A remote browser must be
/// started with [`REMOTE_REQUIRED`]; the pool checks.
pub const EGRESS_FLAGS: [&str; 3] = [
    "force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "disable-features=Prerender2,SpeculationRulesPrefetchFuture,NoStatePrefetchHoldback,PreloadingHeuristicsMLModel",
    "dns-prefetch-disable",
];

/// The flag a remote browser must have been started with (its WebRTC would otherwise send UDP
/// that no proxy sees); `--enable-automation` too, so that the pool can read its command line.
pub const REMOTE_REQUIRED: &str = "force-webrtc-ip-handling-policy=disable_non_proxied_udp";

/// Every switch of a remote browser the allow-list relies on, with the value its last copy must
/// have (empty: present): the WebRTC policy (no UDP) and automation (the command line the pool
/// reads). Its traffic otherwise goes through the per-context proxy whatever its other flags.
pub const REMOTE_SWITCHES: &[(&str, &str)] =
    &[("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"), ("enable-automation", "")];

/// The switches of an argv (the program first) as Chromium reads them (`base::CommandLine` on
/// POSIX): `--name` or `-name`, with `=value` or none; names as written (case matters there);
/// the last copy of a switch wins; nothing after a bare `--` is a switch.
pub fn effective_switches(argv: &[String]) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for a in argv.iter().skip(1) {
        if a == "--" {
            break;
        }
        let Some(body) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else { continue };
        if body.is_empty() {
            continue;
        }
        let (name, value) = body.split_once('=').unwrap_or((body, ""));
        out.insert(name.to_string(), value.to_string());
    }
    out
}

/// Switches a caller's extra flags may not set: they decide where the browser's traffic goes,
/// which is the pool's to decide ([`EGRESS_FLAGS`] and the proxy).
const RESERVED: [&str; 8] = [
    "proxy-server",
    "no-proxy-server",
    "proxy-bypass-list",
    "proxy-pac-url",
    "proxy-auto-detect",
    "force-webrtc-ip-handling-policy",
    "remote-allow-origins",
    "host-resolver-rules",
];

/// Whether `flag` (without dashes) sets one of the [`RESERVED`] switches.
pub fn is_reserved(flag: &str) -> bool {
    let name = flag.trim_start_matches('-').split('=').next().unwrap_or_default();
    RESERVED.contains(&name)
}

/// The flags a local Chromium gets, without leading dashes: [`BASE_FLAGS`], [`FLAGS`], then
/// `extra`. Chromium keeps only the last of a repeated switch, so the `enable-features` and
/// `disable-features` lists are merged into one switch each: a caller's list adds to ours
/// instead of silently replacing it (and RenderDocument would come back on).
pub fn chromium_flags(extra: &[String]) -> Vec<String> {
    const LISTS: [&str; 2] = ["enable-features=", "disable-features="];
    let ours = BASE_FLAGS.iter().chain(FLAGS.iter()).map(|f| f.to_string());
    let theirs = extra.iter().map(|a| a.trim_start_matches('-').to_string());
    let mut out: Vec<String> = Vec::new();
    for flag in ours.chain(theirs) {
        let earlier = LISTS.iter().find_map(|p| {
            let list = flag.strip_prefix(p)?;
            Some((out.iter().position(|o| o.starts_with(p))?, list))
        });
        match earlier {
            Some((i, list)) => {
                if !list.is_empty() {
                    out[i] = format!("{},{list}", out[i]);
                }
            }
            None => out.push(flag),
        }
    }
    out
}

/// Prefix of the temporary directories (user-data-dir and log) of local browsers.
const TEMP_PREFIX: &str = "wrl-chromium-";

/// How long Chromium may take to open its DevTools endpoint.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Launches headless Chromium with a fresh user-data-dir and connects to it. The process is
/// ours ([`ChromiumProcess`]): it is killed when the result is dropped and, on Linux, when this
/// process dies, even by SIGKILL.
/// Its traffic goes through `proxy` (`http://IP:PORT`; loopback included; the pool always
/// gives one, `None` is for bare launches in tests and benchmarks) under [`EGRESS_FLAGS`]; a
/// reserved switch among `extra_args` is refused.
pub async fn launch(
    binary: &Path,
    viewport: (u32, u32),
    scale: f64,
    extra_args: &[String],
    proxy: Option<&str>,
    request_timeout: Duration,
) -> Result<Launched, LaunchError> {
    let fail =
        |message: String| LaunchError::Launch { path: binary.display().to_string(), message };
    if let Some(f) = extra_args.iter().find(|f| is_reserved(f)) {
        return Err(fail(format!(
            "the flag `{f}` would decide where the browser's traffic goes; the pool's allow-list proxy does"
        )));
    }
    let mut extra: Vec<String> = extra_args.to_vec();
    extra.extend(EGRESS_FLAGS.iter().map(|f| f.to_string()));
    if let Some(proxy) = proxy {
        extra.push(format!("proxy-server={proxy}"));
        extra.push(format!("proxy-bypass-list={}", crate::proxy::BYPASS));
    }
    process::sweep_stale(&std::env::temp_dir(), TEMP_PREFIX);
    let dir =
        tempfile::Builder::new().prefix(TEMP_PREFIX).tempdir().map_err(LaunchError::TempDir)?;
    process::claim(dir.path());
    let profile = dir.path().join("profile");
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| fail(format!("cannot create {}: {e}", log_path.display())))?;
    // Chromium leaves `org.chromium.Chromium.*` socket directories in TMPDIR when it is
    // killed; giving it a TMPDIR inside ours deletes them with the rest.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| fail(format!("cannot create {}: {e}", tmp.display())))?;
    let mut cmd = std::process::Command::new(binary);
    cmd.env("TMPDIR", &tmp)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={},{}", viewport.0, viewport.1))
        // Last, so that the caller's flags win where Chromium keeps the last of a switch.
        .args(chromium_flags(&extra).iter().map(|f| format!("--{f}")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    let mut process = ChromiumProcess::spawn(cmd, dir).await.map_err(|e| fail(e.to_string()))?;
    // On any error below, dropping `process` kills Chromium.
    let url = devtools_url(&mut process, &profile, &log_path).await.map_err(fail)?;
    let connected = connect(&url, viewport, scale, request_timeout).await?;
    Ok(Launched { process: Some(process), ..connected })
}

/// Waits for Chromium to write `DevToolsActivePort` (port, then the browser's WebSocket path)
/// and returns the WebSocket URL. Fails with the tail of Chromium's stderr if it exits first or
/// takes longer than [`LAUNCH_TIMEOUT`].
async fn devtools_url(
    process: &mut ChromiumProcess,
    profile: &Path,
    log: &Path,
) -> Result<String, String> {
    let file = profile.join("DevToolsActivePort");
    let deadline = Instant::now() + LAUNCH_TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next())
                && port.parse::<u16>().is_ok()
                && path.starts_with("/devtools/browser/")
                && path.len() > "/devtools/browser/".len()
            {
                return Ok(format!("ws://127.0.0.1:{port}{path}"));
            }
        }
        if let Some(status) = process.exited() {
            return Err(format!("Chromium exited ({status}) before DevTools came up{}", tail(log)));
        }
        if Instant::now() > deadline {
            return Err(format!("DevTools did not come up within {LAUNCH_TIMEOUT:?}{}", tail(log)));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The last lines of Chromium's stderr, for error messages.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let last = &lines[lines.len().saturating_sub(10)..];
    if last.is_empty() { String::new() } else { format!("; stderr:\n{}", last.join("\n")) }
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
    Ok(Launched { browser, handler, process: None })
}

#[cfg(test)]
mod tests {
    use super::chromium_flags;

    #[test]
    fn feature_lists_from_the_caller_add_to_ours() {
        let extra = ["--disable-features=Foo".to_string(), "enable-features=Bar".into()];
        let flags = chromium_flags(&extra);
        let disable: Vec<&String> =
            flags.iter().filter(|f| f.starts_with("disable-features=")).collect();
        let enable: Vec<&String> =
            flags.iter().filter(|f| f.starts_with("enable-features=")).collect();
        assert_eq!(disable.len(), 1, "{flags:?}");
        assert_eq!(enable.len(), 1, "{flags:?}");
        assert!(disable[0].contains("RenderDocument") && disable[0].ends_with(",Foo"), "{flags:?}");
        assert!(enable[0].contains("NetworkService,"), "{flags:?}");
        assert!(enable[0].contains("CDPScreenshotNewSurface") && enable[0].ends_with(",Bar"));
        // Other flags pass through, after ours.
        let more = chromium_flags(&["--mute-audio".to_string()]);
        assert_eq!(more.last().map(String::as_str), Some("mute-audio"));
        // Where the traffic goes is not the caller's to say.
        assert!(super::is_reserved("--no-proxy-server"));
        assert!(super::is_reserved("proxy-server=http://x:1"));
        assert!(super::is_reserved("--remote-allow-origins=*"));
        assert!(!super::is_reserved("--mute-audio"));
    }
}
