//! The main loop: the initialize handshake, document notifications, debounced diagnostics and
//! request dispatch. One thread does everything in arrival order (a check of a recipe takes a
//! few milliseconds, so nothing waits long); a panic inside a handler becomes an error reply,
//! and a malformed message a parse error, and the server goes on serving.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::Uri;
use serde_json::Value;

use crate::analysis::Analysis;
use crate::codes::REQUEST_FAILED;
use crate::docs::Doc;
use crate::lines::Encoding;
use crate::transport::{Incoming, Outgoing};
use crate::workspace::{DocName, Overlay, StdlibDocs, Workspace};

/// Settings from the command line, overridden by the client's `initializationOptions`.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long the document must be quiet after a change before diagnostics are published.
    pub debounce: Duration,
    /// The base of the error pages' links (a URL or a directory), if any.
    pub pages: Option<String>,
    pub stdlib: StdlibDocs,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            debounce: Duration::from_millis(DEFAULT_DEBOUNCE_MS),
            pages: None,
            stdlib: StdlibDocs::Virtual,
        }
    }
}

/// The default debounce: long enough to fold a burst of edits (a paste, a macro) into one
/// check, short enough to stay inside a keystroke's 20 ms budget (docs/benchmarks.md).
pub const DEFAULT_DEBOUNCE_MS: u64 = 4;

pub struct Server {
    pub(crate) out: Sender<Outgoing>,
    pub(crate) config: Config,
    pub(crate) ws: Workspace,
    pub(crate) enc: Encoding,
    /// The error pages' base as a URI prefix (ends with `/`).
    pub(crate) pages: Option<String>,
    pub(crate) docs: BTreeMap<String, Doc>,
    /// Documents whose diagnostics are due, and when.
    dirty: BTreeMap<String, Instant>,
    initialized: bool,
    shutdown: bool,
}

impl Server {
    pub fn new(out: Sender<Outgoing>, config: Config) -> Server {
        let ws = Workspace { root: None, stdlib: config.stdlib.clone() };
        Server {
            out,
            config,
            ws,
            enc: Encoding::Utf16,
            pages: None,
            docs: BTreeMap::new(),
            dirty: BTreeMap::new(),
            initialized: false,
            shutdown: false,
        }
    }

    /// Serves until `exit` or the end of input; the exit status LSP asks for (0 after a
    /// `shutdown` request, else 1).
    pub fn run(mut self, rx: &Receiver<Incoming>) -> u8 {
        loop {
            // Diagnostics that are due go out before the next message is handled, so that a
            // stream of requests does not hold them back.
            if self.dirty.values().any(|t| *t <= Instant::now()) {
                self.publish_due();
            }
            let next = match self.dirty.values().min().copied() {
                Some(due) => match rx.recv_deadline(due) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => {
                        self.publish_due();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => None,
                },
                None => rx.recv().ok(),
            };
            let Some(incoming) = next else { break };
            match incoming {
                Incoming::Msg(Message::Notification(n)) if n.method == "exit" => break,
                Incoming::Msg(m) => self.message(m),
                Incoming::Malformed(why) => {
                    let err = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": null,
                        "error": { "code": ErrorCode::ParseError as i32, "message": format!("not a JSON-RPC message: {why}") },
                    });
                    self.send(Outgoing::Raw(err.to_string()));
                }
            }
        }
        if self.shutdown { 0 } else { 1 }
    }

    pub(crate) fn send(&self, m: Outgoing) {
        let _ = self.out.send(m);
    }

    pub(crate) fn notify(&self, method: &str, params: impl serde::Serialize) {
        self.send(Outgoing::Msg(Message::Notification(Notification::new(method.into(), params))));
    }

    fn reply(&self, id: RequestId, result: Result<Value, (i32, String)>) {
        let resp = match result {
            Ok(v) => Response { id, response_result: Ok(v) },
            Err((code, msg)) => Response::new_err(id, code, msg),
        };
        self.send(Outgoing::Msg(Message::Response(resp)));
    }

    fn message(&mut self, m: Message) {
        match m {
            Message::Request(r) => {
                let id = r.id.clone();
                let method = r.method.clone();
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.request(r)));
                let result = result.unwrap_or_else(|_| {
                    Err((
                        ErrorCode::InternalError as i32,
                        format!("internal error in wrlc lsp while answering `{method}`; please report it with the document that caused it"),
                    ))
                });
                self.reply(id, result);
            }
            Message::Notification(n) => {
                let method = n.method.clone();
                let done =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.notification(n)));
                if done.is_err() {
                    self.log(&format!(
                        "internal error in wrlc lsp while handling `{method}`; please report it"
                    ));
                }
            }
            // The server sends no requests, so a response answers nothing.
            Message::Response(_) => {}
        }
    }

    pub(crate) fn log(&self, text: &str) {
        let params = lsp_types::LogMessageParams {
            typ: lsp_types::MessageType::ERROR,
            message: text.into(),
        };
        self.notify("window/logMessage", params);
    }

    fn request(&mut self, r: Request) -> Result<Value, (i32, String)> {
        match (r.method.as_str(), self.initialized, self.shutdown) {
            ("initialize", false, _) => {
                let v = self.initialize(r.params)?;
                self.initialized = true;
                Ok(v)
            }
            ("initialize", true, _) => {
                Err((ErrorCode::InvalidRequest as i32, "the server is already initialized".into()))
            }
            (_, false, _) => {
                Err((ErrorCode::ServerNotInitialized as i32, "send `initialize` first".into()))
            }
            ("shutdown", true, _) => {
                self.shutdown = true;
                Ok(Value::Null)
            }
            (_, true, true) => {
                Err((ErrorCode::InvalidRequest as i32, "the server is shutting down".into()))
            }
            (method, true, false) => crate::requests::dispatch(self, method, r.params),
        }
    }

    fn initialize(&mut self, params: Value) -> Result<Value, (i32, String)> {
        let p: lsp_types::InitializeParams = serde_json::from_value(params).map_err(|e| {
            (ErrorCode::InvalidParams as i32, format!("invalid `initialize` params: {e}"))
        })?;
        let utf8 = p
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_ref())
            .is_some_and(|es| es.iter().any(|e| e.as_str() == "utf-8"));
        self.enc = if utf8 { Encoding::Utf8 } else { Encoding::Utf16 };
        #[allow(deprecated)] // `root_uri` is what older clients (Neovim 0.7) send
        let root = p
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .map(|f| f.uri.clone())
            .or(p.root_uri.clone())
            .and_then(|u| crate::uri::to_path(&u));
        let opts = p.initialization_options.unwrap_or(Value::Null);
        if let Some(ms) = opts.get("debounceMs").and_then(Value::as_u64) {
            self.config.debounce = Duration::from_millis(ms.min(5000));
        }
        if let Some(pages) = opts.get("errorPages").and_then(Value::as_str) {
            self.config.pages = Some(pages.to_string()).filter(|p| !p.is_empty());
        }
        match opts.get("stdlib").and_then(Value::as_str) {
            Some("files") => {
                let dir = opts
                    .get("stdlibDir")
                    .and_then(Value::as_str)
                    .map(PathBuf::from)
                    .unwrap_or_else(default_stdlib_dir);
                self.config.stdlib = StdlibDocs::Files(dir);
            }
            Some("virtual") => self.config.stdlib = StdlibDocs::Virtual,
            Some(other) => {
                return Err((
                    ErrorCode::InvalidParams as i32,
                    format!("`stdlib` is `virtual` or `files`, not `{other}`"),
                ));
            }
            None => {}
        }
        if let StdlibDocs::Files(dir) = &self.config.stdlib
            && let Err(e) = crate::workspace::write_stdlib(dir)
        {
            self.log(&format!(
                "cannot write the stdlib under `{}` ({e}); serving it as `wrl-stdlib:` documents",
                dir.display()
            ));
            self.config.stdlib = StdlibDocs::Virtual;
        }
        self.ws = Workspace { root: root.clone(), stdlib: self.config.stdlib.clone() };
        self.pages = crate::pages::base(self.config.pages.as_deref(), root.as_deref());
        Ok(serde_json::json!({
            "capabilities": crate::requests::capabilities(self.enc),
            "serverInfo": { "name": "wrlc lsp", "version": env!("CARGO_PKG_VERSION") },
        }))
    }

    fn notification(&mut self, n: Notification) {
        if !self.initialized {
            return;
        }
        match n.method.as_str() {
            "textDocument/didOpen" => {
                let Ok(p) =
                    serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params)
                else {
                    return self.log("invalid `textDocument/didOpen` params");
                };
                let d = p.text_document;
                let key = d.uri.as_str().to_string();
                let name = self.ws.classify(&d.uri);
                self.docs.insert(key.clone(), Doc::new(d.uri, name, d.text, d.version));
                self.changed(&key, true);
            }
            "textDocument/didChange" => {
                let Ok(p) =
                    serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params)
                else {
                    return self.log("invalid `textDocument/didChange` params");
                };
                let key = p.text_document.uri.as_str().to_string();
                let enc = self.enc;
                match self.docs.get_mut(&key) {
                    Some(doc) => doc.apply(p.text_document.version, p.content_changes, enc),
                    None => {
                        return self.log(&format!("`didChange` for `{key}`, which is not open"));
                    }
                }
                self.changed(&key, false);
            }
            "textDocument/didClose" => {
                let Ok(p) =
                    serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params)
                else {
                    return self.log("invalid `textDocument/didClose` params");
                };
                let key = p.text_document.uri.as_str().to_string();
                if self.docs.remove(&key).is_some() {
                    self.dirty.remove(&key);
                    let params = lsp_types::PublishDiagnosticsParams::new(
                        p.text_document.uri,
                        Vec::new(),
                        None,
                    );
                    self.notify("textDocument/publishDiagnostics", params);
                    self.dependents_changed(&key);
                }
            }
            // A saved or changed file on disk can change what other documents import.
            "textDocument/didSave" | "workspace/didChangeWatchedFiles" => {
                let keys: Vec<String> = self.docs.keys().cloned().collect();
                for k in keys {
                    self.changed(&k, false);
                }
            }
            _ => {}
        }
    }

    /// A document's text changed: it and the open documents that import it are checked again
    /// once quiet (at once when just opened).
    fn changed(&mut self, key: &str, now: bool) {
        if let Some(doc) = self.docs.get_mut(key) {
            doc.stale = true;
        }
        let due = if now { Instant::now() } else { Instant::now() + self.config.debounce };
        self.dirty.insert(key.to_string(), due);
        self.dependents_changed(key);
    }

    fn dependents_changed(&mut self, key: &str) {
        let Some(name) = self
            .docs
            .get(key)
            .map(|d| d.display_name().to_string())
            .or_else(|| Some(key.to_string()))
        else {
            return;
        };
        let due = Instant::now() + self.config.debounce;
        let deps: Vec<String> = self
            .docs
            .iter()
            .filter(|(k, d)| *k != key && d.analysis.as_ref().is_some_and(|a| a.reads(&name)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in deps {
            if let Some(d) = self.docs.get_mut(&k) {
                d.stale = true;
            }
            self.dirty.entry(k).or_insert(due);
        }
    }

    /// Publishes the diagnostics of every document whose time has come.
    fn publish_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> =
            self.dirty.iter().filter(|(_, t)| **t <= now).map(|(k, _)| k.clone()).collect();
        for key in due {
            self.dirty.remove(&key);
            let done =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.publish(&key)));
            if done.is_err() {
                self.log(&format!("internal error in wrlc lsp while checking `{key}`; please report it with the document"));
            }
        }
    }

    fn publish(&mut self, key: &str) {
        self.ensure(key);
        let Some(doc) = self.docs.get(key) else { return };
        let diagnostics = match &doc.analysis {
            Some(a) => self.conv().diagnostics(a, &doc.lines),
            None => Vec::new(),
        };
        let params = lsp_types::PublishDiagnosticsParams::new(
            doc.uri.clone(),
            diagnostics,
            Some(doc.version),
        );
        self.notify("textDocument/publishDiagnostics", params);
    }

    pub(crate) fn conv(&self) -> crate::convert::Conv<'_> {
        crate::convert::Conv { ws: &self.ws, enc: self.enc, pages: self.pages.as_deref() }
    }

    /// Analyses a document if its analysis is stale (stdlib documents are never analysed:
    /// they are part of every compilation and have no diagnostics of their own).
    pub(crate) fn ensure(&mut self, key: &str) {
        let Some(doc) = self.docs.get(key) else { return };
        if !doc.stale || doc.is_stdlib() {
            return;
        }
        let open: BTreeMap<PathBuf, &str> =
            self.docs.values().filter_map(|d| Some((d.path()?.clone(), d.text.as_str()))).collect();
        let loader = Overlay { ws: &self.ws, open: &open };
        let analysis = Analysis::new(doc.display_name(), &doc.text, &loader, doc.utf8_error());
        if let Some(doc) = self.docs.get_mut(key) {
            doc.analysis = Some(analysis);
            doc.stale = false;
        }
    }

    /// The key of a document a request names, analysed; or the error to answer with.
    pub(crate) fn doc_key(&mut self, uri: &Uri) -> Result<String, (i32, String)> {
        let key = uri.as_str().to_string();
        if !self.docs.contains_key(&key) {
            if let DocName::Stdlib(name) = self.ws.classify(uri) {
                let text = crate::stdlib::index().module(name).map_or("", |m| m.text);
                self.docs.insert(
                    key.clone(),
                    Doc::new(uri.clone(), DocName::Stdlib(name), text.into(), 0),
                );
                return Ok(key);
            }
            return Err((
                REQUEST_FAILED,
                format!("`{key}` is not open: send `textDocument/didOpen` first"),
            ));
        }
        self.ensure(&key);
        Ok(key)
    }
}

/// Where `stdlib = "files"` writes the stdlib when no `stdlibDir` is given.
fn default_stdlib_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("wrl").join(format!("stdlib-{}", env!("CARGO_PKG_VERSION")))
}
