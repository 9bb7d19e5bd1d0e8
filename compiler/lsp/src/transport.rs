//! The stdio transport: a reader thread and a writer thread around the main loop, with
//! `lsp-server`'s framing. Unlike `lsp_server::Connection::stdio`, a frame that is not a
//! JSON-RPC message (bad JSON, bytes that are not UTF-8, a broken header) does not end the
//! session: it is handed to the main loop, which answers with a parse error and carries on.

use std::io::{BufReader, Write};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use lsp_server::Message;

/// What the reader hands the main loop.
#[derive(Debug)]
pub enum Incoming {
    Msg(Message),
    /// A frame that could not be read as a message, and why.
    Malformed(String),
}

/// What the main loop hands the writer.
#[derive(Debug)]
pub enum Outgoing {
    Msg(Message),
    /// A JSON-RPC object written as is (a parse error has `"id": null`, which
    /// `lsp_server::Response` cannot hold).
    Raw(String),
}

/// The threads behind [`stdio`]; joined once the main loop is done.
pub struct Threads {
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Threads {
    /// Waits for the writer to flush everything. The reader is not waited for: it may be
    /// blocked reading a stdin the client keeps open after `exit`.
    pub fn join(self) {
        let _ = self.writer.join();
        drop(self.reader);
    }
}

/// Starts the reader (stdin) and writer (stdout) threads.
pub fn stdio() -> std::io::Result<(Receiver<Incoming>, Sender<Outgoing>, Threads)> {
    let (in_tx, in_rx) = crossbeam_channel::unbounded::<Incoming>();
    let (out_tx, out_rx) = crossbeam_channel::unbounded::<Outgoing>();
    let reader = std::thread::Builder::new().name("wrl-lsp-reader".into()).spawn(move || {
        let stdin = std::io::stdin();
        read_loop(&mut BufReader::new(stdin.lock()), &in_tx);
    })?;
    let writer = std::thread::Builder::new().name("wrl-lsp-writer".into()).spawn(move || {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        write_loop(&mut out, &out_rx);
    })?;
    Ok((in_rx, out_tx, Threads { reader, writer }))
}

/// Reads frames until end of input, an I/O error or `exit`.
pub fn read_loop(mut input: &mut dyn std::io::BufRead, tx: &Sender<Incoming>) {
    loop {
        match Message::read(&mut input) {
            Ok(Some(msg)) => {
                let exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
                if tx.send(Incoming::Msg(msg)).is_err() || exit {
                    return;
                }
            }
            Ok(None) => return,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                if tx.send(Incoming::Malformed(e.to_string())).is_err() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// Writes every message the main loop sends until it hangs up.
pub fn write_loop(mut out: &mut dyn Write, rx: &Receiver<Outgoing>) {
    for m in rx {
        let ok = match m {
            Outgoing::Msg(msg) => msg.write(&mut out).is_ok(),
            Outgoing::Raw(text) => write!(out, "Content-Length: {}\r\n\r\n{text}", text.len())
                .and_then(|()| out.flush())
                .is_ok(),
        };
        if !ok {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_frames_do_not_end_the_stream() {
        let good = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
        let bad_json = "{not json";
        let mut input = Vec::new();
        for body in [bad_json.as_bytes(), b"\xff\xfe", good.as_bytes()] {
            input.extend(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            input.extend(body);
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        read_loop(&mut std::io::Cursor::new(input), &tx);
        let got: Vec<Incoming> = rx.try_iter().collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(matches!(got[0], Incoming::Malformed(_)));
        assert!(matches!(got[1], Incoming::Malformed(_)));
        assert!(
            matches!(&got[2], Incoming::Msg(Message::Notification(n)) if n.method == "initialized")
        );
    }
}
