// The wrl extension's code: starts `wrlc lsp` for .wrl files through Microsoft's language
// client and serves the embedded stdlib's `wrl-stdlib:` documents read-only (the server sends
// their text on `wrl/virtualTextDocument`). Plain JavaScript: no build step. The one
// dependency, vscode-languageclient, comes from `npm install --omit=dev` in this folder (see
// editors/README.md); without it the grammar still works and a message says what to run.
"use strict";
const vscode = require("vscode");

let client;

/** The options the server reads from `initializationOptions`. */
function initOptions(cfg) {
  const out = { debounceMs: cfg.get("debounceMs", 4) };
  const pages = cfg.get("errorPages", "");
  if (pages) {
    out.errorPages = pages;
  }
  return out;
}

async function activate(context) {
  const cfg = vscode.workspace.getConfiguration("wrl");
  if (!cfg.get("server.enable", true)) {
    return;
  }
  let lc;
  try {
    lc = require("vscode-languageclient/node");
  } catch (e) {
    vscode.window.showWarningMessage(
      "wrl: run `npm install --omit=dev` in the extension's folder to use `wrlc lsp` " +
        "(highlighting works without it).",
    );
    return;
  }
  const serverOptions = {
    command: cfg.get("server.path", "wrlc") || "wrlc",
    args: ["lsp"],
    transport: lc.TransportKind.stdio,
  };
  const clientOptions = {
    documentSelector: [
      { language: "wrl", scheme: "file" },
      { language: "wrl", scheme: "untitled" },
      { language: "wrl", scheme: "wrl-stdlib" },
    ],
    initializationOptions: initOptions(cfg),
  };
  client = new lc.LanguageClient("wrl", "wrl (wrlc lsp)", serverOptions, clientOptions);
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider("wrl-stdlib", {
      provideTextDocumentContent: (uri) =>
        client.sendRequest("wrl/virtualTextDocument", { textDocument: { uri: uri.toString() } }),
    }),
    vscode.commands.registerCommand("wrl.restartServer", () => client.restart()),
  );
  await client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate, initOptions };
