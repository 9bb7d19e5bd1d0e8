//! `wrlc env serve` as a process: it prints its URL (and, without WRL_ENV_TOKEN, the token it
//! made) and refuses a client without the token; a public address needs `--public` and a
//! token; SIGINT and SIGTERM stop it with its browsers' temporary folders removed. Then verl 0.9.1 itself against the whole path (`bench/verl-check.sh`): skipped, with
//! the reason printed, where no Python with verl 0.9.1 is installed.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};

use wrl_cli::run_captured;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A raw HTTP/1.1 GET (no client crate in this package's tests): the status and the body.
fn get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, out.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

#[test]
fn the_service_names_its_url_and_token_and_refuses_clients_without_it() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wrlc"))
        .current_dir(root())
        .args(["env", "serve", "recipes/quickstart.wrl", "--bind", "127.0.0.1:0"])
        .arg("--state-dir")
        .arg(std::env::temp_dir())
        .env_remove("WRL_ENV_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    let url = first.strip_prefix("serving env at http://").unwrap_or_else(|| panic!("{first}"));
    let token = second.strip_prefix("token ").unwrap_or_else(|| panic!("{second}"));
    assert_eq!(token.len(), 32, "a fresh 128-bit token: {token}");
    let (status, body) = get(url, "/v1/env", None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("E0611"), "{body}");
    let (status, body) = get(url, "/v1/env", Some(token));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("stage:online/phase:1") && body.contains("plan_digest"), "{body}");
    assert_eq!(get(url, "/v1/health", None).0, 200);
    child.kill().unwrap();
    let _ = child.wait();
}

/// The `wrl-chromium-*` folders (profile and log) of the service's browsers under `tmp`.
fn chromium_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("wrl-chromium-"))
        .collect()
}

/// SIGTERM killed the service where it stood and SIGINT left its pool to the runtime's drop:
/// both left `wrl-chromium-*` (a profile each) in the temporary folder. Both now stop it as
/// Ctrl-C does, with the browsers closed and their folders removed.
#[test]
fn sigint_and_sigterm_stop_the_service_and_remove_its_browsers_folders() {
    for signal in ["-INT", "-TERM"] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_wrlc"))
            .current_dir(root())
            .args(["env", "serve", "recipes/quickstart.wrl", "--bind", "127.0.0.1:0"])
            .arg("--state-dir")
            .arg(tmp.path())
            .env("TMPDIR", tmp.path())
            .env("WRL_ENV_TOKEN", "t")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        assert!(first.starts_with("serving env at http://"), "{first}");
        assert!(!chromium_dirs(tmp.path()).is_empty(), "the service started no browser");
        let pid = child.id().to_string();
        assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > std::time::Duration::from_secs(30) {
                let _ = child.kill();
                panic!("`wrlc env serve` did not stop on SIG{}", &signal[1..]);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(status.success(), "SIG{}: {status}: {err}", &signal[1..]);
        assert!(err.contains("stopped"), "{err}");
        let left = chromium_dirs(tmp.path());
        assert!(left.is_empty(), "SIG{} left {left:?}", &signal[1..]);
    }
}

#[test]
fn a_public_address_needs_public_and_a_token() {
    let (code, out, err) =
        run_captured(["env", "serve", "recipes/quickstart.wrl", "--bind", "0.0.0.0:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("E0616") && err.contains("--public"), "{err}");
}

#[test]
fn verl_itself_accepts_the_jobs_and_runs_the_agent_loop_against_the_service() {
    let py = std::env::var("VERL_PY").unwrap_or_else(|_| "/work/venvs/verl/bin/python".into());
    let has_verl = Command::new(&py)
        .args(["-c", "import verl, sys; sys.exit(verl.__version__ != '0.9.1')"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_verl {
        eprintln!(
            "SKIPPED: no Python with verl 0.9.1 at `{py}` (set VERL_PY, or make one with \
             integrations/verl/tests/make_venv.sh); verl's own checks of the lowered jobs did not run"
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .current_dir(root())
        .arg("bench/verl-check.sh")
        .arg(work.path())
        .env("VERL_PY", &py)
        .env("WRLC", env!("CARGO_BIN_EXE_wrlc"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("VERL CHECK OK"), "{stdout}");
    assert!(stdout.contains("verl accepted openwebrl-smoke/online-2"), "{stdout}");
}
