//! Measures `wrlc lsp` as an editor sees it: a client process writes an incremental
//! `didChange` (one keystroke) into a ~200-line recipe and times how long until the
//! `publishDiagnostics` of that version arrives, over real pipes; then the time to answer
//! hover, completion, inlay hints and semantic tokens. Prints a Markdown table with the
//! server's CPU time per operation (which the load on a shared machine does not inflate) and
//! the load average beside it. Run it through `bench/lsp.sh` (release build).
//!
//! The server is this binary run as `wrl-bench-lsp serve`, which calls the same
//! `wrl_lsp::run_stdio` as `wrlc lsp` (so the benchmark builds only the compiler crates), or any
//! binary given with `--server PATH` (run as `PATH lsp`). Options: `--edits N` keystrokes per
//! server (default 300, the first 20 not counted), `--file PATH` (default
//! `recipes/openwebrl.wrl`), `--requests N` per request kind (default 100).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: i64,
}

impl Client {
    fn start(cmd: &[String]) -> Client {
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Client { child, stdin, stdout, next: 1 }
    }

    fn send(&mut self, v: &Value) {
        let body = v.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    fn recv(&mut self) -> Value {
        let mut len = 0;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).expect("read") == 0 {
                panic!("the server closed its output");
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                len = v.parse().expect("length");
            }
        }
        let mut body = vec![0; len];
        self.stdout.read_exact(&mut body).expect("body");
        serde_json::from_slice(&body).expect("JSON")
    }

    fn request(&mut self, method: &str, params: Value) -> (Duration, Value) {
        let id = self.next;
        self.next += 1;
        let t = Instant::now();
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let m = self.recv();
            if m["id"] == id {
                return (t.elapsed(), m);
            }
        }
    }

    /// Waits for the diagnostics of `version`.
    fn diagnostics(&mut self, version: i64) -> Value {
        loop {
            let m = self.recv();
            if m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == version
            {
                return m["params"].clone();
            }
        }
    }
}

/// CPU time the server's threads have run so far (`/proc/PID/task/*/schedstat`, ns): the
/// figure the load on a shared machine does not inflate.
fn cpu(pid: u32) -> Duration {
    let mut ns = 0u64;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            ns += stat.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
        }
    }
    Duration::from_nanos(ns)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn pos_of(text: &str, needle: &str, after: bool) -> Value {
    let i = text.find(needle).unwrap_or_else(|| panic!("`{needle}` not in the file"))
        + if after { needle.len() } else { 0 };
    let line = text[..i].matches('\n').count();
    let col = text[..i].rsplit('\n').next().map_or(0, |l| l.encode_utf16().count());
    json!({ "line": line, "character": col })
}

struct Stats {
    n: usize,
    /// The server's CPU time per operation, on average.
    cpu: Duration,
    median: Duration,
    p95: Duration,
    max: Duration,
}

fn stats(mut v: Vec<Duration>, cpu: Duration) -> Stats {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    let n = v.len();
    Stats { n, cpu: cpu / n.max(1) as u32, median: at(0.5), p95: at(0.95), max: v[n - 1] }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// One server: keystrokes, then requests. Rows of (what, stats).
fn bench(
    cmd: &[String],
    init: Value,
    file: &str,
    edits: usize,
    requests: usize,
) -> Vec<(String, Stats)> {
    let root = std::env::current_dir().expect("cwd");
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let uri = format!("file://{}", path.display());
    let mut c = Client::start(cmd);
    c.request("initialize", json!({ "processId": null, "rootUri": format!("file://{}", root.display()), "capabilities": {}, "initializationOptions": init }));
    c.notify("initialized", json!({}));
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "wrl", "version": 0, "text": text } }),
    );
    c.diagnostics(0);
    // Three places, typed into and deleted from in turn: a value (the recipe stays clean, so
    // the planner's checks run too), a comment, and a field name (an E0301 with a did-you-mean).
    let sites = [
        pos_of(&text, "prompts = 48", true),
        pos_of(&text, "// --rollout-batch-size", true),
        pos_of(&text, "  group", true),
    ];
    let mut keys = Vec::new();
    let pid = c.child.id();
    let mut cpu0 = cpu(pid);
    for i in 0..edits + 20 {
        if i == 20 {
            cpu0 = cpu(pid);
        }
        let site = &sites[(i / 2) % sites.len()];
        let (line, ch) = (site["line"].clone(), site["character"].as_u64().unwrap_or(0));
        let change = if i % 2 == 0 {
            json!({ "range": { "start": { "line": line, "character": ch }, "end": { "line": line, "character": ch } }, "text": "9" })
        } else {
            json!({ "range": { "start": { "line": line, "character": ch }, "end": { "line": line, "character": ch + 1 } }, "text": "" })
        };
        let version = i as i64 + 1;
        let t = Instant::now();
        c.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [change] }));
        let d = c.diagnostics(version);
        let took = t.elapsed();
        if i >= 20 {
            keys.push(took);
        }
        if i % 6 == 4 {
            assert!(
                d["diagnostics"].as_array().is_some_and(|a| !a.is_empty()),
                "the typo is reported"
            );
        }
    }
    let mut rows = vec![("keystroke → diagnostics".to_string(), stats(keys, cpu(pid) - cpu0))];
    let doc = json!({ "uri": uri });
    let reqs: [(&str, &str, Value); 4] = [
        (
            "hover (a field, 2 profiles)",
            "textDocument/hover",
            json!({ "textDocument": doc, "position": pos_of(&text, "group = 5", false) }),
        ),
        (
            "completion (fields of grpo)",
            "textDocument/completion",
            json!({ "textDocument": doc, "position": pos_of(&text, "  checkpoint_every = 5 iters", false) }),
        ),
        (
            "inlay hints (whole file)",
            "textDocument/inlayHint",
            json!({ "textDocument": doc, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 9999, "character": 0 } } }),
        ),
        (
            "semantic tokens (whole file)",
            "textDocument/semanticTokens/full",
            json!({ "textDocument": doc }),
        ),
    ];
    for (label, method, params) in reqs {
        let before = cpu(pid);
        let times: Vec<Duration> =
            (0..requests).map(|_| c.request(method, params.clone()).0).collect();
        rows.push((label.to_string(), stats(times, cpu(pid) - before)));
    }
    c.request("shutdown", Value::Null);
    c.notify("exit", Value::Null);
    let _ = c.child.wait();
    rows
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        std::process::exit(i32::from(wrl_lsp::run_stdio(wrl_lsp::Config::default())));
    }
    let mut edits = 300;
    let mut requests = 100;
    let mut file = "recipes/openwebrl.wrl".to_string();
    let mut servers: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--edits" => edits = value().parse().expect("--edits N"),
            "--requests" => requests = value().parse().expect("--requests N"),
            "--file" => file = value(),
            "--server" => servers.push(value()),
            other => panic!("unknown option `{other}`"),
        }
    }
    let me = std::env::current_exe().expect("own path").display().to_string();
    let lines = std::fs::read_to_string(&file).map(|t| t.lines().count()).unwrap_or(0);
    let mut runs: Vec<(String, Vec<String>, Value)> = vec![
        ("release, debounce 4 ms (default)".into(), vec![me.clone(), "serve".into()], json!({})),
        ("release, no debounce".into(), vec![me, "serve".into()], json!({ "debounceMs": 0 })),
    ];
    for s in servers {
        runs.push((format!("`{s} lsp`"), vec![s, "lsp".into()], json!({})));
    }
    println!(
        "`{file}` ({lines} lines), {edits} keystrokes and {requests} requests of each kind per server\n"
    );
    println!(
        "| server | what | n | median | p95 | max | server CPU / op | load average before → after |"
    );
    println!("|---|---|--:|--:|--:|--:|--:|---|");
    for (label, cmd, init) in runs {
        let before = loadavg();
        let rows = bench(&cmd, init, &file, edits, requests);
        let after = loadavg();
        for (what, s) in rows {
            println!(
                "| {label} | {what} | {} | {} | {} | {} | {} | {before} → {after} |",
                s.n,
                ms(s.median),
                ms(s.p95),
                ms(s.max),
                ms(s.cpu)
            );
        }
    }
}
