// Loads the extension's code (extension.js) with stand-ins for the `vscode` API and for
// vscode-languageclient, and checks what it does with them: the language client starts
// `<wrl.server.path> lsp` over stdio for wrl documents (files, untitled, the stdlib), passes the
// settings as initializationOptions, and serves `wrl-stdlib:` documents through the server's
// `wrl/virtualTextDocument` request. Also: every setting it reads is declared in package.json.
// (No VS Code here; the real client is tested against `wrlc lsp` by editors/lsp-test.sh.)
import fs from 'node:fs';
import path from 'node:path';
import Module from 'node:module';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.join(here, '..', 'extension.js');
const pkg = JSON.parse(fs.readFileSync(path.join(here, '..', 'package.json'), 'utf8'));

const seen = { providers: {}, commands: {}, requests: [] };
const settings = { 'server.path': '/opt/wrl/wrlc', 'server.enable': true, debounceMs: 7, errorPages: 'https://example.org/errors/' };
const vscode = {
  workspace: {
    getConfiguration: (section) => {
      assert.equal(section, 'wrl');
      return { get: (key, dflt) => (key in settings ? settings[key] : dflt) };
    },
    registerTextDocumentContentProvider: (scheme, p) => { seen.providers[scheme] = p; return { dispose() {} }; },
  },
  commands: { registerCommand: (name, f) => { seen.commands[name] = f; return { dispose() {} }; } },
  window: { showWarningMessage: (m) => { seen.warning = m; } },
};
class LanguageClient {
  constructor(id, name, server, client) { Object.assign(seen, { id, name, server, client }); }
  async start() { seen.started = true; }
  async stop() { seen.stopped = true; }
  async restart() { seen.restarted = true; }
  async sendRequest(method, params) { seen.requests.push([method, params]); return 'builtin grpo(…)'; }
}
const stubs = { vscode, 'vscode-languageclient/node': { LanguageClient, TransportKind: { stdio: 0 } } };
const load = Module._load;
Module._load = function (request, ...rest) {
  return request in stubs ? stubs[request] : load.call(this, request, ...rest);
};
const require = Module.createRequire(import.meta.url);
const extension = require(ext);

const context = { subscriptions: [] };
await extension.activate(context);
assert.equal(seen.started, true);
assert.deepEqual(seen.server, { command: '/opt/wrl/wrlc', args: ['lsp'], transport: 0 });
assert.deepEqual(seen.client.documentSelector.map((s) => s.scheme), ['file', 'untitled', 'wrl-stdlib']);
assert.deepEqual(seen.client.initializationOptions, { debounceMs: 7, errorPages: 'https://example.org/errors/' });
const text = await seen.providers['wrl-stdlib'].provideTextDocumentContent({ toString: () => 'wrl-stdlib:///std/prelude.wrl' });
assert.equal(text, 'builtin grpo(…)');
assert.deepEqual(seen.requests, [['wrl/virtualTextDocument', { textDocument: { uri: 'wrl-stdlib:///std/prelude.wrl' } }]]);
await seen.commands['wrl.restartServer']();
assert.equal(seen.restarted, true);
await extension.deactivate();
assert.equal(seen.stopped, true);
assert.ok(!seen.warning);

// Every `cfg.get("…")` in extension.js is a declared setting; every command is contributed.
const source = fs.readFileSync(ext, 'utf8');
const declared = Object.keys(pkg.contributes.configuration.properties);
for (const [, key] of source.matchAll(/cfg\.get\("([^"]+)"/g)) {
  assert.ok(declared.includes(`wrl.${key}`), `wrl.${key} is not declared in package.json`);
}
assert.deepEqual(pkg.contributes.commands.map((c) => c.command), Object.keys(seen.commands));
assert.equal(pkg.main, './extension.js');
assert.ok(pkg.activationEvents.includes('onLanguage:wrl'));
console.log('extension test: ok');
