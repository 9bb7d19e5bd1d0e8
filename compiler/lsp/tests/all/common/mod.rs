//! A client for the tests: runs the server's main loop on a thread over in-memory channels
//! (the same loop `wrlc lsp` runs over stdio) and speaks JSON to it.

#![allow(dead_code)] // each test file uses part of it

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Message, Notification, Request, RequestId};
use serde_json::{Value, json};
use wrl_lsp::{Config, Incoming, Outgoing, Server};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

pub struct Session {
    tx: Option<Sender<Incoming>>,
    rx: Receiver<Outgoing>,
    next: i32,
    pub notes: Vec<Notification>,
    /// Responses with `"id": null` (parse errors).
    pub raw: Vec<Value>,
    handle: Option<JoinHandle<u8>>,
}

impl Session {
    /// A server with a short debounce, not yet initialized.
    pub fn new() -> Session {
        let (in_tx, in_rx) = crossbeam_channel::unbounded();
        let (out_tx, out_rx) = crossbeam_channel::unbounded();
        let config = Config { debounce: Duration::from_millis(1), ..Config::default() };
        let handle = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || Server::new(out_tx, config).run(&in_rx))
            .expect("server thread");
        Session {
            tx: Some(in_tx),
            rx: out_rx,
            next: 1,
            notes: Vec::new(),
            raw: Vec::new(),
            handle: Some(handle),
        }
    }

    /// A server initialized with the workspace root as its root.
    pub fn start() -> Session {
        let mut s = Session::new();
        let root = workspace_root();
        let r = s.request(
            "initialize",
            json!({ "processId": null, "rootUri": format!("file://{}", root.display()), "capabilities": {} }),
        );
        assert!(r.is_ok(), "{r:?}");
        s.notify("initialized", json!({}));
        s
    }

    pub fn send(&self, m: Incoming) {
        if let Some(tx) = &self.tx {
            tx.send(m).expect("server alive");
        }
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(Incoming::Msg(Message::Notification(Notification::new(method.into(), params))));
    }

    fn recv(&mut self) -> Outgoing {
        self.rx.recv_timeout(Duration::from_secs(20)).expect("the server answers within 20 s")
    }

    /// Sends a request and waits for its response: the result, or (code, message).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, (i32, String)> {
        let id = self.next;
        self.next += 1;
        self.send(Incoming::Msg(Message::Request(Request::new(
            RequestId::from(id),
            method.into(),
            params,
        ))));
        loop {
            match self.recv() {
                Outgoing::Msg(Message::Response(r)) if r.id == RequestId::from(id) => {
                    return r.response_result.map_err(|e| (e.code, e.message));
                }
                Outgoing::Msg(Message::Notification(n)) => self.notes.push(n),
                Outgoing::Raw(text) => {
                    self.raw.push(serde_json::from_str(&text).expect("raw JSON"))
                }
                Outgoing::Msg(other) => panic!("unexpected {other:?}"),
            }
        }
    }

    /// Waits for the next diagnostics published for `uri` (ones already received count).
    pub fn diagnostics(&mut self, uri: &str) -> Value {
        loop {
            if let Some(i) = self.notes.iter().position(|n| {
                n.method == "textDocument/publishDiagnostics" && n.params["uri"] == uri
            }) {
                return self.notes.remove(i).params;
            }
            match self.recv() {
                Outgoing::Msg(Message::Notification(n)) => self.notes.push(n),
                Outgoing::Raw(text) => {
                    self.raw.push(serde_json::from_str(&text).expect("raw JSON"))
                }
                Outgoing::Msg(other) => panic!("unexpected {other:?}"),
            }
        }
    }

    /// Opens a file of the workspace (by its path relative to the root); returns its URI.
    pub fn open(&mut self, rel: &str) -> String {
        let path = workspace_root().join(rel);
        let text = String::from_utf8_lossy(&std::fs::read(&path).expect("readable")).into_owned();
        self.open_text(&format!("file://{}", path.display()), &text)
    }

    pub fn open_text(&mut self, uri: &str, text: &str) -> String {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "wrl", "version": 1, "text": text } }),
        );
        uri.to_string()
    }

    /// Waits for the server to stop (after `exit`); its exit status.
    pub fn join(mut self) -> u8 {
        self.tx = None;
        self.handle.take().map(|h| h.join().expect("server thread")).unwrap_or(99)
    }

    /// Ends the session as a client does; returns the server's exit status.
    pub fn finish(mut self) -> u8 {
        let _ = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        self.tx = None;
        self.handle.take().map(|h| h.join().expect("server thread")).unwrap_or(99)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The 0-based position of the `nth` occurrence of `needle` in `text`, plus `delta` columns.
pub fn pos(text: &str, needle: &str, nth: usize, delta: u32) -> Value {
    let mut at = 0;
    let mut found = None;
    for _ in 0..=nth {
        found = text[at..].find(needle).map(|i| at + i);
        at = found.expect("needle in text") + 1;
    }
    let idx = found.expect("needle in text");
    let line = text[..idx].matches('\n').count();
    let col = text[..idx].rsplit('\n').next().map_or(0, |l| l.encode_utf16().count());
    json!({ "line": line, "character": col as u32 + delta })
}

pub fn doc_pos(uri: &str, p: Value) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": p })
}
